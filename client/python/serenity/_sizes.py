"""Byte sizes with the CLI's suffixes: 2MiB, 512K, 1.5GB, or plain ints."""

import re

_UNITS = {
    "": 1, "B": 1,
    "K": 1 << 10, "KIB": 1 << 10, "M": 1 << 20, "MIB": 1 << 20, "G": 1 << 30, "GIB": 1 << 30,
    "KB": 10**3, "MB": 10**6, "GB": 10**9,
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")


def parse_size(value, what="size"):
    """`value` (an int, or a string such as "2MiB") in bytes.

    K/KiB, M/MiB, G/GiB are powers of 1024; KB, MB, GB powers of 1000.
    ValueError for negative, fractional-byte or unknown sizes."""
    if isinstance(value, bool):
        raise ValueError(f"{what} must be a number of bytes, not {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"{what} must not be negative: {value}")
        return value
    if not isinstance(value, str):
        raise ValueError(f"{what} must be an int or a string such as '2MiB', not {value!r}")
    match = _SIZE.match(value)
    unit = match.group(2).upper() if match else None
    if not match or unit not in _UNITS:
        raise ValueError(f"{what} {value!r} is not a size: give bytes, or a number with K/KiB, M/MiB, "
                         "G/GiB (powers of 1024) or KB, MB, GB (powers of 1000)")
    number = match.group(1)
    whole, _, frac = number.partition(".")
    scale = _UNITS[unit]
    numerator = int(whole + frac) * scale
    denominator = 10 ** len(frac)
    if numerator % denominator:
        raise ValueError(f"{what} {value!r} is not a whole number of bytes")
    return numerator // denominator


def positive_budget(budget):
    """`budget` unchanged when it is a positive size; ValueError otherwise (fits() and slack() need one)."""
    if budget is None or parse_size(budget, "budget") <= 0:
        raise ValueError("fits() and slack() need a positive budget")
    return budget
