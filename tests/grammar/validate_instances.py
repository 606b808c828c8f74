#!/usr/bin/python3
"""Validates generated JSON texts against their schemas with Debian's python3-jsonschema.

stdin: [{"name": ..., "schema": ..., "instances": [text, ...]}, ...]
stdout: a JSON list of failures [{"name", "text", "error"}]; empty when all are valid.

jsonschema's own format checkers are used where it has them (date, email, ipv4, ipv6, uri,
uuid, ...); date-time, time and hostname, which it checks only with optional packages, are
checked here after RFC 3339 (section 5.6) and RFC 1123, written independently of the grammar.
"""
import datetime
import json
import re
import sys

import jsonschema

FULL_TIME = re.compile(r"^(\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-](\d{2}):(\d{2}))$")
LABEL = re.compile(r"^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$")


def is_time(s):
    m = FULL_TIME.match(s)
    if not m:
        return False
    h, mi, sec = int(m.group(1)), int(m.group(2)), int(m.group(3))
    if h > 23 or mi > 59 or sec > 60:
        return False
    if m.group(6) and (int(m.group(6)) > 23 or int(m.group(7)) > 59):
        return False
    return True


def is_date_time(s):
    if "T" not in s and "t" not in s:
        return False
    date, _, time = re.split("([Tt])", s, maxsplit=1)
    try:
        datetime.date.fromisoformat(date)
    except ValueError:
        return False
    return len(date) == 10 and is_time(time)


def is_hostname(s):
    return len(s) <= 253 and all(LABEL.match(label) for label in s.split("."))


def checker():
    fc = jsonschema.FormatChecker()
    fc.checks("time")(is_time)
    fc.checks("date-time")(is_date_time)
    fc.checks("hostname")(is_hostname)
    return fc


def main():
    cases = json.load(sys.stdin)
    failures = []
    for case in cases:
        schema = case["schema"]
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        validator = cls(schema, format_checker=checker())
        for text in case["instances"]:
            try:
                value = json.loads(text)
            except ValueError as e:
                failures.append({"name": case["name"], "text": text, "error": "not JSON: %s" % e})
                continue
            errors = [e.message for e in validator.iter_errors(value)]
            if errors:
                failures.append({"name": case["name"], "text": text, "error": "; ".join(errors)[:500]})
    json.dump(failures, sys.stdout)


if __name__ == "__main__":
    main()
