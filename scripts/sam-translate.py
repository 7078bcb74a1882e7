#!/usr/bin/env python3
"""Translates a SAM template into plain CloudFormation JSON with aws-sam-translator, the library
`sam deploy` and CloudFormation's AWS::Serverless transform use, offline.

    scripts/sam-translate.py [--code-uri s3://bucket/key] [--region R] [--account A]
                             [--param Name=Value ...] TEMPLATE > translated.json

--code-uri sets every AWS::Serverless::Function's CodeUri (the translator needs a concrete S3
location; `sam build` + `sam package` would otherwise upload the built code and write it in).
--param gives a template parameter's value; the translator resolves the parameters it needs with
them and the defaults. Run it with the Python of .cache/venv (scripts/venv.sh prints its bin/):
aws-sam-translator is pinned in scripts/python-requirements.txt.

Exit status 1 with a message on stderr when the template cannot be read or translated.
"""

import argparse
import json
import sys

import boto3
import yaml
from samtranslator.model.exceptions import InvalidDocumentException
from samtranslator.parser.parser import Parser
from samtranslator.translator.translator import Translator


def no_managed_policy_names():
    """The template grants its policies as statements and SAM policy templates and names no AWS
    managed policy by name (SAM adds the ones it needs as full ARNs), so no IAM is asked. A policy
    named by name would need IAM to turn it into an ARN: that is an error here, not a guess."""
    raise SystemExit(
        "sam-translate: the template names an AWS managed policy by name; "
        "give its ARN instead (this offline translation asks no IAM)"
    )


class Loader(yaml.SafeLoader):
    """YAML as CloudFormation reads it: a plain `=` is the string "=" (PyYAML would take it for
    YAML 1.1's value tag), and the short forms (!Ref X, !GetAtt A.B, !Sub ...) are the long ones."""


Loader.add_constructor("tag:yaml.org,2002:value", Loader.construct_scalar)


def _short_form(loader, suffix, node):
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)
    if suffix == "Ref" or suffix == "Condition":
        return {suffix: value}
    if suffix == "GetAtt" and isinstance(value, str):
        value = value.split(".", 1)
    return {"Fn::" + suffix: value}


Loader.add_multi_constructor("!", _short_form)


def parse_uri(uri):
    if not uri.startswith("s3://") or "/" not in uri[len("s3://") :]:
        raise SystemExit(f"sam-translate: --code-uri {uri!r} is not s3://bucket/key")
    bucket, key = uri[len("s3://") :].split("/", 1)
    if not bucket or not key:
        raise SystemExit(f"sam-translate: --code-uri {uri!r} is not s3://bucket/key")
    return {"Bucket": bucket, "Key": key}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("template")
    ap.add_argument("--code-uri", help="s3://bucket/key of every function's code")
    ap.add_argument("--region", default="us-east-1")
    ap.add_argument("--account", default="123456789012")
    ap.add_argument("--param", action="append", default=[], metavar="NAME=VALUE")
    args = ap.parse_args()

    try:
        with open(args.template, encoding="utf-8") as f:
            template = yaml.load(f, Loader=Loader)  # noqa: S506 (a SafeLoader)
    except (OSError, yaml.YAMLError) as e:
        raise SystemExit(f"sam-translate: read {args.template}: {e}")
    if not isinstance(template, dict) or "Resources" not in template:
        raise SystemExit(f"sam-translate: {args.template} has no Resources")

    params = {}
    for p in args.param:
        name, sep, value = p.partition("=")
        if not sep or not name:
            raise SystemExit(f"sam-translate: --param {p!r} is not NAME=VALUE")
        if name not in template.get("Parameters", {}):
            raise SystemExit(f"sam-translate: --param {name}: the template has no such parameter")
        params[name] = value
    params.update({"AWS::AccountId": args.account, "AWS::URLSuffix": "amazonaws.com"})

    if args.code_uri:
        code = parse_uri(args.code_uri)
        for resource in template["Resources"].values():
            if resource.get("Type") == "AWS::Serverless::Function":
                resource.setdefault("Properties", {})["CodeUri"] = dict(code)

    try:
        # The session only names the region (and so the partition); it makes no call.
        translator = Translator(None, Parser(), boto_session=boto3.session.Session(region_name=args.region))
        out = translator.translate(template, parameter_values=params, get_managed_policy_map=no_managed_policy_names)
    except InvalidDocumentException as e:
        causes = "; ".join(c.message for c in e.causes)
        raise SystemExit(f"sam-translate: {args.template} is not a valid SAM template: {causes}")
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
