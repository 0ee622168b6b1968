// Validates rendered Kubernetes manifests, offline:
//  1. every object against the Kubernetes API schema of its kind
//     (kubernetes-models: types, required fields, formats; the API schemas
//     do not reject unknown keys, so point 2 checks the keys that matter);
//  2. the deployment's own rules: native gRPC probes on the health port, a
//     pinned image, non-root read-only containers, a termination grace
//     longer than the server's drain, every --flag known to serenity-server
//     and every $(VAR) defined, every Secret/ConfigMap/Service it names
//     present or documented.
// Usage: node validate.mjs RENDERED.yaml|KUSTOMIZATION_DIR SERVER_HELP.txt [SERVER_VERSION_LINE]
// Given a directory, renders it as `kubectl kustomize` would for what the
// base uses (resources, images, labels), for machines without kubectl.
import fs from "node:fs";
import yaml from "js-yaml";

const [renderedPath, helpPath] = process.argv.slice(2);
function renderBase(dir) {
  const k = yaml.load(fs.readFileSync(`${dir}/kustomization.yaml`, "utf8"));
  const known = new Set(["apiVersion", "kind", "labels", "resources", "images"]);
  for (const key of Object.keys(k)) {
    if (!known.has(key)) throw new Error(`kustomization field ${key} is not rendered without kubectl`);
  }
  const out = [];
  for (const r of k.resources ?? []) {
    for (const o of yaml.loadAll(fs.readFileSync(`${dir}/${r}`, "utf8")).filter(Boolean)) {
      for (const { pairs } of k.labels ?? []) Object.assign((o.metadata.labels ??= {}), pairs);
      for (const c of o.spec?.template?.spec?.containers ?? []) {
        const image = (k.images ?? []).find((i) => i.name === c.image);
        if (image) c.image = `${image.newName ?? image.name}:${image.newTag}`;
      }
      out.push(o);
    }
  }
  return out;
}

const docs = fs.statSync(renderedPath).isDirectory()
  ? renderBase(renderedPath)
  : yaml.loadAll(fs.readFileSync(renderedPath, "utf8")).filter(Boolean);
const serverHelp = fs.readFileSync(helpPath, "utf8");
const errors = [];
const fail = (what, message) => errors.push(`${what}: ${message}`);
const nameOf = (o) => `${o.kind}/${o.metadata?.name}`;

// Secrets are created by the operator (deploy/README.md), not committed.
const operatorSecrets = new Set(["serenity-tls", "serenity-tokens", "serenity-plan-id", "serenity-redis-auth"]);

// kubernetes-models/<group>/<version> (core: kubernetes-models/v1) exports one class per kind.
async function modelClass(apiVersion, kind) {
  try {
    return (await import(`kubernetes-models/${apiVersion}`))[kind];
  } catch {
    return undefined;
  }
}

for (const o of docs) {
  const Model = await modelClass(o.apiVersion ?? "", o.kind ?? "");
  if (!Model) {
    fail(nameOf(o), `unknown apiVersion/kind ${o.apiVersion} ${o.kind}`);
    continue;
  }
  try {
    new Model(o).validate();
  } catch (e) {
    fail(nameOf(o), e.message);
  }
}

const byKind = (kind) => docs.filter((o) => o.kind === kind);
const names = (kind) => new Set(byKind(kind).map((o) => o.metadata.name));
const configMaps = new Map(byKind("ConfigMap").map((o) => [o.metadata.name, o.data ?? {}]));
// "serenity-server 0.4.0 (commit ...)" is the first line of --version; run.sh
// passes it after the help.
const serverVersion = (process.argv[4] ?? "").split(" ")[1];
const knownFlags = new Set([...serverHelp.matchAll(/^\s+--([a-z0-9-]+)/gm)].map((m) => m[1]));

for (const d of byKind("Deployment")) {
  const spec = d.spec.template.spec;
  const pod = spec.securityContext ?? {};
  if (pod.runAsNonRoot !== true) fail(nameOf(d), "pod securityContext.runAsNonRoot must be true");
  for (const c of spec.containers) {
    const where = `${nameOf(d)} container ${c.name}`;
    if (!/:[0-9A-Za-z._-]+$/.test(c.image) && !/@sha256:/.test(c.image)) {
      fail(where, `image ${c.image} has no pinned tag`);
    }
    if (/:latest$/.test(c.image)) fail(where, "image tag latest");
    const sc = c.securityContext ?? {};
    if (sc.allowPrivilegeEscalation !== false) fail(where, "allowPrivilegeEscalation must be false");
    if (sc.readOnlyRootFilesystem !== true) fail(where, "readOnlyRootFilesystem must be true");
    if (!(sc.capabilities?.drop ?? []).includes("ALL")) fail(where, "capabilities must drop ALL");
    if (!c.resources?.requests?.memory || !c.resources?.limits?.memory) fail(where, "memory requests and limits");
    for (const probe of ["readinessProbe", "livenessProbe"]) {
      if (!c[probe]) fail(where, `no ${probe}`);
    }
    // Secrets and ConfigMaps it reads.
    for (const v of spec.volumes ?? []) {
      if (v.secret && !operatorSecrets.has(v.secret.secretName) && !names("Secret").has(v.secret.secretName)) {
        fail(where, `volume ${v.name}: Secret ${v.secret.secretName} is neither rendered nor documented`);
      }
    }
    const env = new Set((c.env ?? []).map((e) => e.name));
    for (const from of c.envFrom ?? []) {
      const cm = configMaps.get(from.configMapRef?.name);
      if (!cm) fail(where, `envFrom ConfigMap ${from.configMapRef?.name} is not rendered`);
      else Object.keys(cm).forEach((k) => env.add(k));
    }
    for (const e of c.env ?? []) {
      const ref = e.valueFrom?.secretKeyRef?.name;
      if (ref && !operatorSecrets.has(ref)) fail(where, `env ${e.name}: Secret ${ref} is not documented`);
    }
    for (const arg of c.args ?? []) {
      for (const m of String(arg).matchAll(/\$\(([A-Z0-9_]+)\)/g)) {
        if (!env.has(m[1])) fail(where, `argument ${arg} uses $(${m[1]}), which no env or ConfigMap defines`);
      }
    }
    if (c.name === "serenity-server") {
      const args = (c.args ?? []).map(String);
      for (const a of args.filter((a) => a.startsWith("--"))) {
        if (!knownFlags.has(a.slice(2).split("=")[0])) fail(where, `serenity-server has no flag ${a}`);
      }
      const flag = (f) => { const i = args.indexOf(f); return i >= 0 ? args[i + 1] : undefined; };
      if (!c.startupProbe) fail(where, "no startupProbe");
      const healthPort = Number(flag("--health-port"));
      if (!healthPort) fail(where, "needs --health-port for the kubelet's plaintext gRPC probes");
      for (const probe of ["startupProbe", "readinessProbe", "livenessProbe"]) {
        if (c[probe] && c[probe].grpc?.port !== healthPort) {
          fail(where, `${probe} must be a native gRPC probe on the health port ${healthPort}`);
        }
      }
      if (args.includes("--plaintext")) fail(where, "the shared service must serve TLS");
      if (serverVersion && !c.image.endsWith(`:${serverVersion}`)) {
        fail(where, `image ${c.image} is not tagged with the built version ${serverVersion}`);
      }
      const graceVar = flag("--shutdown-grace-seconds");
      const drain = Number(/^\$\((\w+)\)$/.test(graceVar ?? "")
        ? [...configMaps.values()].map((cm) => cm[graceVar.slice(2, -1)]).find((v) => v !== undefined)
        : graceVar);
      if (!(spec.terminationGracePeriodSeconds > drain)) {
        fail(where, `terminationGracePeriodSeconds ${spec.terminationGracePeriodSeconds} must exceed the drain ${drain}`);
      }
      const redis = flag("--redis");
      if (redis && !names("Service").has(redis.split(":")[0])) fail(where, `--redis ${redis}: no such Service`);
    }
  }
}

const deployments = names("Deployment");
for (const kind of ["HorizontalPodAutoscaler"]) {
  for (const o of byKind(kind)) {
    if (!deployments.has(o.spec.scaleTargetRef.name)) fail(nameOf(o), `targets missing ${o.spec.scaleTargetRef.name}`);
  }
}
if (byKind("PodDisruptionBudget").length === 0) fail("manifests", "no PodDisruptionBudget");
if (byKind("HorizontalPodAutoscaler").length === 0) fail("manifests", "no HorizontalPodAutoscaler");
if (byKind("NetworkPolicy").length === 0) fail("manifests", "no NetworkPolicy");
for (const s of byKind("Service")) {
  const selected = docs.filter((o) => o.kind === "Deployment" &&
    Object.entries(s.spec.selector ?? {}).every(([k, v]) => o.spec.template.metadata.labels?.[k] === v));
  if (selected.length === 0) fail(nameOf(s), "selects no Deployment's pods");
}
if (!byKind("Service").some((s) => s.spec.clusterIP === "None" && s.spec.ports.some((p) => p.name === "grpc"))) {
  fail("manifests", "no headless Service for client-side balancing of gRPC calls");
}

if (errors.length > 0) {
  console.error(errors.join("\n"));
  process.exit(1);
}
console.log(`${docs.length} objects valid`);
