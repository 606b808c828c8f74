#!/usr/bin/env python3
"""Reference renderer for the chat-template tests: Python's Jinja2 set up exactly as Hugging
Face transformers renders chat templates (ImmutableSandboxedEnvironment, trim_blocks,
lstrip_blocks, loopcontrols and the {% generation %} tag, raise_exception / strftime_now
globals, json.dumps-based tojson).

Reads {"cases": [{"template": SOURCE, "context": {...}, "now": UNIX_SECONDS or null}, ...]} on
stdin and writes a JSON array with, per case, {"output": TEXT} or
{"error": TYPE, "message": TEXT, "raised": BOOL} (raised: the template called raise_exception).
"now" fixes strftime_now's clock (naive UTC datetime, as the engine under test renders it).
"""
import json
import sys
from datetime import datetime, timezone

import jinja2
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


class RaisedByTemplate(jinja2.exceptions.TemplateError):
    pass


class GenerationTag(Extension):
    """transformers' AssistantTracker, minus the tracking: {% generation %} renders its body."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def make_env(now):
    def raise_exception(message):
        raise RaisedByTemplate(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        if now is None:
            return datetime.now().strftime(format)
        return datetime.fromtimestamp(now, tz=timezone.utc).replace(tzinfo=None).strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[GenerationTag, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render(case):
    try:
        env = make_env(case.get("now"))
        return {"output": env.from_string(case["template"]).render(**case["context"])}
    except Exception as e:  # every failure is a result to compare, not a crash
        return {"error": type(e).__name__, "message": str(e), "raised": isinstance(e, RaisedByTemplate)}


def main():
    # Bytes in and out: UTF-8 whatever the locale of the test environment.
    request = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    results = [render(case) for case in request["cases"]]
    sys.stdout.buffer.write(json.dumps(results, ensure_ascii=False).encode("utf-8"))


if __name__ == "__main__":
    main()
