#!/usr/bin/env python3
#===- scripts/validate_json.py - Check result files against Kiln's schemas --===#
#
#   scripts/validate_json.py SCHEMA.json FILE.json [FILE.json ...]
#
# Validates each file against a JSON Schema (draft 2020-12) from
# docs/schemas/ with the pinned `jsonschema` package; prints every violation
# with its JSON path and exits 1 if there is one, 0 when all files conform.
#
#===----------------------------------------------------------------------===#

import json
import sys

import jsonschema


def main(argv):
    if len(argv) < 3:
        print(__doc__ or "usage: validate_json.py SCHEMA FILE...",
              file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    bad = 0
    for path in argv[2:]:
        with open(path) as f:
            data = json.load(f)
        errors = sorted(validator.iter_errors(data), key=lambda e: e.path)
        for e in errors:
            where = "/".join(str(p) for p in e.absolute_path) or "(root)"
            print(f"{path}: {where}: {e.message}")
        bad += len(errors)
        if not errors:
            print(f"{path}: valid ({schema.get('title', argv[1])})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
