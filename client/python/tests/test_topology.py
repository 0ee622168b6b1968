"""The shared service's production topology on loopback: two serenity-server replicas sharing one
redis-server, behind Debian's nginx balancing gRPC between them (grpc_pass).

TLS: none here. Everything is plaintext on 127.0.0.1 (h2c between client, nginx and replicas); in a
deployment TLS terminates at nginx (`listen ... ssl http2`) or runs end to end (`grpc_pass grpcs://`).
Bearer tokens cross nginx unchanged, so every replica checks them itself."""

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

import grpc
import pytest

import serenity
from conftest import Server, diamond_graph

TOKEN = "topology-test-token"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, process, log, seconds=20):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"exited: {open(log).read()}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"port {port} did not open: {open(log).read()}")


class Redis:
    def __init__(self, directory):
        self.dir = directory
        self.port = free_port()  # redis-server cannot take port 0
        self.start()

    def start(self):
        log = os.path.join(self.dir, "redis.log")
        self.process = subprocess.Popen(["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
                                         "--save", "", "--appendonly", "no", "--dir", self.dir],
                                        stdout=open(log, "a"), stderr=subprocess.STDOUT)
        wait_for_port(self.port, self.process, log)

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=20)


class Nginx:
    def __init__(self, directory, upstream_ports, backup_last=False):
        """Balances calls round-robin over `upstream_ports`; with backup_last, the last one takes calls
        only when the others are down."""
        self.port = free_port()
        conf = os.path.join(directory, f"nginx-{self.port}.conf")
        servers = "".join(f"    server 127.0.0.1:{p} max_fails=1 fail_timeout=30s"
                          f"{' backup' if backup_last and i == len(upstream_ports) - 1 else ''};\n"
                          for i, p in enumerate(upstream_ports))
        with open(conf, "w") as f:
            f.write(f"""daemon off;
worker_processes 1;
pid {directory}/nginx-{self.port}.pid;
error_log {directory}/nginx-error.log warn;
events {{ worker_connections 256; }}
http {{
  access_log off;
  client_body_temp_path {directory}/body;
  proxy_temp_path {directory}/proxy;
  fastcgi_temp_path {directory}/fastcgi;
  uwsgi_temp_path {directory}/uwsgi;
  scgi_temp_path {directory}/scgi;
  client_max_body_size 64m;
  upstream serenity {{
{servers}  }}
  server {{
    listen 127.0.0.1:{self.port} http2;
    location / {{
      grpc_pass grpc://serenity;
      grpc_read_timeout 300s;
      grpc_send_timeout 300s;
    }}
  }}
}}
""")
        log = os.path.join(directory, "nginx.log")
        self.process = subprocess.Popen([shutil.which("nginx") or "/usr/sbin/nginx", "-c", conf, "-e",
                                         os.path.join(directory, "nginx-error.log")],
                                        stdout=open(log, "w"), stderr=subprocess.STDOUT)
        wait_for_port(self.port, self.process, log)

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=20)


@pytest.fixture
def topology():
    if not shutil.which("redis-server") or not (shutil.which("nginx") or os.path.exists("/usr/sbin/nginx")):
        pytest.skip("needs redis-server and nginx (scripts/install_deps.sh installs them)")
    directory = tempfile.mkdtemp(prefix="serenity-topology-")
    with open(os.path.join(directory, "tokens"), "w") as f:
        f.write(f"nas {TOKEN}\n")
    with open(os.path.join(directory, "plan-id"), "w") as f:
        f.write("0123456789abcdef0123456789abcdef\n")
    redis = Redis(directory)
    flags = ["--redis", f"127.0.0.1:{redis.port}", "--token-file", os.path.join(directory, "tokens"),
             "--plan-id-secret-file", os.path.join(directory, "plan-id"), "--threads", "2",
             "--redis-timeout-ms", "200"]
    a, b = Server(*flags), Server(*flags)
    nginx = Nginx(directory, [a.port, b.port])
    yield {"redis": redis, "a": a, "b": b, "nginx": nginx, "dir": directory}
    for part in (nginx, a, b):
        try:
            part.stop()
        except Exception:
            pass
    redis.stop()
    shutil.rmtree(directory, ignore_errors=True)


def client(address, **kw):
    return serenity.Client(address, plaintext=True, token=TOKEN, allow_insecure_token=True, timeout=60,
                           retries=6, backoff=0.2, **kw)


def test_a_plan_made_on_one_replica_is_a_hit_on_the_other(topology):
    with client(topology["a"].address) as a, client(topology["b"].address) as b:
        g = diamond_graph("shared", branches=4)
        assert a.plan(g).stats.cache == "miss"
        assert b.plan(g).stats.cache == "shared"


def test_token_less_calls_are_refused_everywhere(topology):
    for name in ("a", "b", "nginx"):
        port = topology[name].port
        with serenity.Client(f"127.0.0.1:{port}", plaintext=True, retries=0) as anonymous:
            with pytest.raises(serenity.SerenityError) as raised:
                anonymous.plan(diamond_graph())
            assert raised.value.code == grpc.StatusCode.UNAUTHENTICATED, name


def test_redis_down_then_back(topology):
    with client(topology["a"].address) as a, client(topology["b"].address) as b:
        topology["redis"].stop()
        g = diamond_graph("during_outage", branches=5)
        assert a.plan(g).stats.cache == "miss"
        assert b.plan(g).stats.cache == "miss"  # serving, but nothing shared
        topology["redis"].start()
        deadline = time.monotonic() + 20
        for k in range(1000):  # a replica reconnects to Redis on its next use of it
            g2 = diamond_graph("after_outage", branches=6, big=2000 + k)  # a new graph each time
            first = a.plan(g2).stats.cache
            second = b.plan(g2).stats.cache
            if second == "shared" or time.monotonic() > deadline:
                break
        assert first == "miss" and second == "shared"


def slow_graph(i):
    # Distinct graphs (no cache hits), a little search each.
    return diamond_graph(f"slow{i}", branches=6 + i % 4, big=1000 + 10 * i)


def test_killing_a_replica_loses_no_call(topology):
    """Calls go to A (B is nginx's backup) until A is killed in the middle of a Score stream and of a
    run of unary Plan calls: the client retries the unary calls and re-sends, on a new stream, the
    candidates that had no answer; nothing is lost or answered twice."""
    standby = Nginx(topology["dir"], [topology["a"].port, topology["b"].port], backup_last=True)
    streams = []
    try:
        with client(f"127.0.0.1:{standby.port}") as c:
            original = c._score_stub.Score

            def counting_score(*args, **kw):
                streams.append(1)
                return original(*args, **kw)

            c._score_stub.Score = counting_score
            killed = threading.Event()
            stop = threading.Event()
            unary = {"ok": 0, "after_kill": 0, "errors": []}

            def unary_calls():
                i = 0
                while not stop.is_set():
                    i += 1
                    try:
                        c.plan(slow_graph(i))
                        unary["ok"] += 1
                        unary["after_kill"] += killed.is_set()
                    except serenity.SerenityError as error:
                        unary["errors"].append(error)

            worker = threading.Thread(target=unary_calls)
            worker.start()

            def candidates():
                for i in range(40):
                    if i == 10:
                        topology["a"].process.send_signal(signal.SIGKILL)
                        killed.set()
                    yield slow_graph(1000 + i)
                    time.sleep(0.01)

            results = list(c.score(candidates()))
            deadline = time.monotonic() + 60
            while unary["after_kill"] < 20 and time.monotonic() < deadline:
                time.sleep(0.05)
            stop.set()
            worker.join(timeout=120)
        assert killed.is_set()
        assert sorted(r.index for r in results) == list(range(40))  # every candidate answered once
        assert all(r.error is None for r in results), [r.error for r in results if r.error]
        assert len(streams) >= 2  # the stream broke with A and was re-sent through B
        assert unary["errors"] == [] and unary["after_kill"] >= 20, unary
    finally:
        standby.stop()
