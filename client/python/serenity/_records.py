"""Plain Python results in the CLI's JSON format (docs/json-format.md).

A message becomes a `Record`: a dict (so it serialises with json.dumps as
the CLI's `--json` lines do) whose keys are also attributes. The rules are
the JSON format's: proto field names, every scalar and repeated field
present (defaults included), a sub-message only when set, int64 values as
Python ints, enums as their short lowercase names (CERTIFICATE_OPTIMAL ->
"optimal"), maps as dicts.
"""

import re

from google.protobuf import descriptor as _descriptor


class Record(dict):
    """A dict whose keys are also attributes: plan.peak_bytes == plan["peak_bytes"]."""

    __slots__ = ()

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"no field {name!r}; fields: {', '.join(self)}") from None

    def __dir__(self):
        return list(self.keys())


def _enum_prefix(enum_type):
    # Certificate -> CERTIFICATE_, BufferKind -> BUFFER_KIND_.
    return re.sub(r"(?<!^)(?=[A-Z])", "_", enum_type.name).upper() + "_"


def enum_name(enum_type, number):
    """The short lowercase name of enum value `number` ("optimal")."""
    value = enum_type.values_by_number.get(number)
    if value is None:
        return number
    name = value.name
    prefix = _enum_prefix(enum_type)
    if name.startswith(prefix):
        name = name[len(prefix):]
    return name.lower()


def _value(field, value):
    if field.type == _descriptor.FieldDescriptor.TYPE_MESSAGE:
        return to_record(value)
    if field.type == _descriptor.FieldDescriptor.TYPE_ENUM:
        return enum_name(field.enum_type, value)
    if field.type == _descriptor.FieldDescriptor.TYPE_BYTES:
        return bytes(value)
    return value


def to_record(message):
    """`message` as a Record, by the JSON format's rules."""
    out = Record()
    for field in message.DESCRIPTOR.fields:
        value = getattr(message, field.name)
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            value_field = field.message_type.fields_by_name["value"]
            out[field.name] = Record({k: _value(value_field, v) for k, v in value.items()})
        elif field.label == _descriptor.FieldDescriptor.LABEL_REPEATED:
            out[field.name] = [_value(field, v) for v in value]
        elif field.type == _descriptor.FieldDescriptor.TYPE_MESSAGE:
            if message.HasField(field.name):
                out[field.name] = to_record(value)
        else:
            out[field.name] = _value(field, value)
    return out


def to_records(value):
    """Nested dicts and lists (parsed JSON) as Records, recursively."""
    if isinstance(value, dict):
        return Record({k: to_records(v) for k, v in value.items()})
    if isinstance(value, list):
        return [to_records(v) for v in value]
    return value
