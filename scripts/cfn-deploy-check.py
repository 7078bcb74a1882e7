#!/usr/bin/env python3
"""Deploys template.yaml on moto server's CloudFormation and checks what it created.

    scripts/cfn-deploy-check.py --endpoint http://127.0.0.1:5055 [--template template.yaml]

For each parameter set (the defaults, and every optional parameter set so that every condition is
true) it:

1. translates the SAM template to plain CloudFormation with scripts/sam-translate.py
   (aws-sam-translator), every function's code a small zip uploaded to moto's S3;
2. checks every reference of every resource the conditions create, and of every output: each Ref,
   Fn::GetAtt, Fn::Sub variable and DependsOn names a parameter, a pseudo parameter or a resource
   that is created with these parameters, and each condition it names exists;
3. creates the stack on moto's CloudFormation, in an account of its own (moto keeps each account
   apart, so runs never meet), and requires CREATE_COMPLETE with every logical id of the translated
   template listed by ListStackResources, except the types moto's CloudFormation does not model;
4. has moto resolve every Ref/Fn::GetAtt/Fn::Sub/Fn::Join of every resource (each becomes an output
   of the stack) and requires each to resolve to a value;
5. creates what moto's CloudFormation does not model (alarms, queue and topic policies, the topic
   subscription, event invoke configs, the alias and Function URL) through the services' own APIs
   with their resolved properties, as CloudFormation would;
6. compares what the services then hold with the template: each role's inline and managed policies
   and trust policy, each rule's pattern or schedule and targets (ARN, retry policy, dead-letter
   queue), the state machine's definition, role, type and logging, each function's role, runtime,
   architecture, memory, timeout, environment and reserved concurrency, each alarm's metric,
   threshold and actions (whose topics must exist), the table's keys and billing, log retention;
7. requires everything to point inside the stack: rule targets, dead-letter queues, roles, the
   functions the definition invokes, alarm dimensions and the DynamoDB/EventBridge/Lambda/Step
   Functions/SQS/SNS resources of every grant are resources the stack created.

Exit status 0 when every check passes; 1 with every failure listed otherwise. The python must be
.cache/venv's (scripts/venv.sh prints its bin/): it imports boto3 and moto's model list.
"""

import argparse
import ast
import io
import json
import os
import random
import re
import subprocess
import sys
import zipfile

import boto3
import yaml
from moto.cloudformation.parsing import get_model_map

HERE = os.path.dirname(os.path.abspath(__file__))
# What moto 5.2.5's CloudFormation accepts and then does not keep, so reading it back says nothing
# about the template: compared nowhere, and named in the summary.
MOTO_DROPS = {
    ("AWS::Lambda::Function", "Architectures"),  # always x86_64
    ("AWS::IAM::Role", "ManagedPolicyArns"),  # not attached
    ("AWS::StepFunctions::StateMachine", "StateMachineType"),  # always STANDARD
    ("AWS::StepFunctions::StateMachine", "LoggingConfiguration"),  # always OFF
}
PSEUDO = {"AWS::AccountId", "AWS::Region", "AWS::StackName", "AWS::StackId", "AWS::Partition",
          "AWS::URLSuffix", "AWS::NoValue", "AWS::NotificationARNs"}

# The parameter sets deployed. "every option" sets every optional parameter, so that every
# condition is true and every conditional resource is created; the check fails if one is not.
CASES = {
    "defaults": {"ClusterEndpoints": "prod=https://search-prod.example.com"},
    "every option": {
        "ClusterEndpoints": "prod=https://search-prod.example.com,logs=https://search-logs.example.com",
        # As many domains as the template has slots, so that every slot's condition is true.
        "OpenSearchDomainArns": ",".join("arn:aws:es:{region}:{account}:domain/" + d
                                         for d in ("prod", "logs", "search", "audit")),
        "ConfigParameterName": "/shardwise/test/config",
        "WebhookSecretParameter": "/shardwise/test/webhook-secret",
        "AlertEmail": "ops@example.com",
        "VpcSubnetIds": "subnet-0a1b2c3d,subnet-4e5f6a7b",
        "VpcSecurityGroupIds": "sg-0a1b2c3d",
        "DryRun": "false",
        # Five alarm clusters, each with its domain: the most the template takes.
        "AlarmClusters": "prod:search-prod,logs:search-logs,c3:domain-3,c4:domain-4,c5:domain-5",
        # A bus named by the parameter; "defaults" gets the stack's own, shardwise-<stack name>.
        "EventBusName": "shardwise-every-option",
        "BasicAuthSecretArn": "arn:aws:secretsmanager:{region}:{account}:secret:shardwise-basic-AbCdEf",
        # A reservation is off by default (a new account cannot make one); on here.
        "WebhookConcurrency": "50",
        # Five hard sandboxes, each with its alarm slot.
        "SandboxAlarms": "prod/s1,prod/s2,logs/s3,logs/s4,prod/s5",
    },
    # One stack for three clusters that are domains: each role grants its requests on the three
    # and the two empty slots grant nothing.
    "three domains": {
        "ClusterEndpoints": "prod=https://search-prod.example.com,logs=https://search-logs.example.com,"
                            "search=https://search-search.example.com",
        "OpenSearchDomainArns": ",".join("arn:aws:es:{region}:{account}:domain/" + d for d in ("prod", "logs", "search")),
    },
}


class Failures(list):
    def add(self, case, msg):
        self.append(f"{case}: {msg}")


# ---------------------------------------------------------------- template evaluation (offline)

def param_values(template, given, failures, case):
    """The parameters' values as CloudFormation takes them: given, else the default, each checked
    against its AllowedPattern and AllowedValues."""
    values = {}
    for name in given:
        if name not in template.get("Parameters", {}):
            failures.add(case, f"parameter {name} is given but the template has none of that name")
    for name, spec in template.get("Parameters", {}).items():
        v = given.get(name, spec.get("Default"))
        if v is None:
            failures.add(case, f"parameter {name} has no default and is not given")
            continue
        v = str(v)
        listed = spec["Type"] == "CommaDelimitedList" or spec["Type"].startswith("List<")
        for item in (v.split(",") if listed else [v]):
            if "AllowedPattern" in spec and not re.fullmatch(spec["AllowedPattern"], item):
                failures.add(case, f"parameter {name}: {item!r} does not match {spec['AllowedPattern']}")
            if "AllowedValues" in spec and item not in [str(a) for a in spec["AllowedValues"]]:
                failures.add(case, f"parameter {name}: {item!r} is not one of {spec['AllowedValues']}")
        values[name] = [x.strip() for x in v.split(",")] if listed else v
    return values


def eval_value(v, params, pseudo, conds):
    """The value of a condition operand: a literal, a parameter, Fn::Join, Fn::Split, Fn::Select, Condition."""
    if isinstance(v, dict) and len(v) == 1:
        (fn, arg), = v.items()
        if fn == "Ref":
            if arg in params:
                return params[arg]
            if arg in pseudo:
                return pseudo[arg]
            raise ValueError(f"Ref {arg} in a condition names no parameter")
        if fn == "Fn::Join":
            items = eval_value(arg[1], params, pseudo, conds)
            return arg[0].join(eval_value(i, params, pseudo, conds) for i in items) if isinstance(items, list) else items
        if fn == "Fn::Split":
            return eval_value(arg[1], params, pseudo, conds).split(arg[0])
        if fn == "Fn::Select":
            return eval_value(arg[1], params, pseudo, conds)[int(arg[0])]
        if fn == "Condition":
            return conds(arg)
        if fn in ("Fn::Equals", "Fn::Not", "Fn::And", "Fn::Or"):
            return eval_cond(v, params, pseudo, conds)
        raise ValueError(f"{fn} is not evaluable in a condition here")
    if isinstance(v, list):
        return [eval_value(x, params, pseudo, conds) for x in v]
    return v


def eval_cond(c, params, pseudo, conds):
    (fn, arg), = c.items()
    if fn == "Fn::Equals":
        a, b = (eval_value(x, params, pseudo, conds) for x in arg)
        return str(a) == str(b) if not isinstance(a, list) and not isinstance(b, list) else a == b
    if fn == "Fn::Not":
        return not eval_value(arg[0], params, pseudo, conds)
    if fn == "Fn::And":
        return all(eval_value(x, params, pseudo, conds) for x in arg)
    if fn == "Fn::Or":
        return any(eval_value(x, params, pseudo, conds) for x in arg)
    if fn == "Condition":
        return conds(arg)
    raise ValueError(f"condition function {fn} unknown")


def conditions(template, params, pseudo):
    defs = template.get("Conditions", {})
    memo = {}

    def get(name):
        if name not in defs:
            raise ValueError(f"condition {name} is not defined")
        if name not in memo:
            memo[name] = bool(eval_cond(defs[name], params, pseudo, get))
        return memo[name]

    return {name: get(name) for name in defs}


NOVALUE = object()


def resolve_ifs(v, conds, where, failures, case):
    """v with each Fn::If replaced by its chosen branch and AWS::NoValue removed, as CloudFormation
    does (moto keeps NoValue as a null inside lists)."""
    if isinstance(v, dict):
        if len(v) == 1 and "Fn::If" in v:
            name, yes, no = v["Fn::If"]
            if name not in conds:
                failures.add(case, f"{where}: Fn::If names condition {name}, which is not defined")
                return NOVALUE
            return resolve_ifs(yes if conds[name] else no, conds, where, failures, case)
        if v == {"Ref": "AWS::NoValue"}:
            return NOVALUE
        out = {k: resolve_ifs(x, conds, where, failures, case) for k, x in v.items()}
        return {k: x for k, x in out.items() if x is not NOVALUE}
    if isinstance(v, list):
        return [x for x in (resolve_ifs(y, conds, where, failures, case) for y in v) if x is not NOVALUE]
    return v


def sub_names(s):
    """The variables of an Fn::Sub string: ${Name} and ${Name.Attr}; ${!Literal} is not one."""
    out, i = [], 0
    while True:
        i = s.find("${", i)
        if i < 0:
            return out
        j = s.find("}", i)
        if j < 0:
            return out
        name = s[i + 2:j]
        if not name.startswith("!"):
            out.append(name)
        i = j + 1


def check_refs(v, where, created, absent, params, failures, case, sub_vars=()):
    """Every Ref, Fn::GetAtt and Fn::Sub variable in v names something that exists here."""
    def target(name, how):
        if name in created or name in PSEUDO or name in params or name in sub_vars:
            return
        if name in absent:
            failures.add(case, f"{where}: {how} {name}, which is not created with these parameters "
                               f"(its condition {absent[name]} is false)")
        else:
            failures.add(case, f"{where}: {how} {name}, which is no resource, parameter or pseudo parameter")

    if isinstance(v, dict):
        if len(v) == 1:
            (fn, arg), = v.items()
            if fn == "Ref":
                target(arg, "Ref names")
                return
            if fn == "Fn::GetAtt":
                name = arg[0] if isinstance(arg, list) else arg.split(".", 1)[0]
                if name in params or name in PSEUDO:
                    failures.add(case, f"{where}: Fn::GetAtt on {name}, which is not a resource")
                else:
                    target(name, "Fn::GetAtt names")
                return
            if fn == "Fn::Sub":
                s, vars_ = (arg, {}) if isinstance(arg, str) else (arg[0], arg[1])
                for k, x in vars_.items():
                    check_refs(x, f"{where} (Fn::Sub variable {k})", created, absent, params, failures, case)
                for name in sub_names(s):
                    base = name.split(".", 1)[0] if "." in name and name.split(".", 1)[0] not in ("AWS",) else name
                    if base in vars_:
                        continue
                    target(base, "Fn::Sub names")
                return
        for k, x in v.items():
            check_refs(x, f"{where}.{k}", created, absent, params, failures, case, sub_vars)
    elif isinstance(v, list):
        for i, x in enumerate(v):
            check_refs(x, f"{where}[{i}]", created, absent, params, failures, case, sub_vars)


# ---------------------------------------------------------------- moto

def clients(endpoint, region, account):
    session = boto3.session.Session(aws_access_key_id="testing", aws_secret_access_key="testing",
                                    region_name=region)

    def make(service):
        c = session.client(service, endpoint_url=endpoint)

        def add_account(request, **_):
            request.headers["x-moto-account-id"] = account
        c.meta.events.register("before-sign.*.*", add_account)
        return c
    return make


def intrinsic(v):
    return isinstance(v, dict) and len(v) == 1 and next(iter(v)) in (
        "Ref", "Fn::GetAtt", "Fn::Sub", "Fn::Join", "Fn::Select", "Fn::Split", "Fn::GetAZs", "Fn::ImportValue",
        "Fn::Base64", "Fn::FindInMap")


def collect(v, found):
    """Appends each outermost intrinsic function node of v to found."""
    if intrinsic(v):
        found.append(v)
    elif isinstance(v, dict):
        for x in v.values():
            collect(x, found)
    elif isinstance(v, list):
        for x in v:
            collect(x, found)


def ref_targets(v):
    """The names v refers to: Ref, Fn::GetAtt and Fn::Sub variables."""
    out = set()
    if isinstance(v, dict):
        for k, x in v.items():
            if k == "Ref" and isinstance(x, str):
                out.add(x)
            elif k == "Fn::GetAtt":
                out.add(x[0] if isinstance(x, list) else x.split(".", 1)[0])
            elif k == "Fn::Sub":
                s = x if isinstance(x, str) else x[0]
                out.update(n.split(".", 1)[0] for n in sub_names(s))
            out |= ref_targets(x)
    elif isinstance(v, list):
        for x in v:
            out |= ref_targets(x)
    return out


def substitute(v, resolved):
    key = json.dumps(v, sort_keys=True) if intrinsic(v) else None
    if key is not None and key in resolved:
        return resolved[key]
    if isinstance(v, dict):
        return {k: substitute(x, resolved) for k, x in v.items()}
    if isinstance(v, list):
        return [substitute(x, resolved) for x in v]
    return v


def code_zip():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("bootstrap", "#!/bin/sh\n# stand-in: moto's CloudFormation stores the code and runs none\n")
    return buf.getvalue()


def norm(doc):
    """A policy or pattern as canonical JSON. moto's CloudFormation stores a role's inline policy
    document as Python's repr of the dict rather than JSON: that is read too."""
    if isinstance(doc, str):
        try:
            doc = json.loads(doc)
        except json.JSONDecodeError:
            doc = ast.literal_eval(doc)
    return json.dumps(doc, sort_keys=True)


def run_case(case, given, args, failures, summary):
    account = f"{random.randrange(10**11, 10**12)}"
    region = args.region
    given = {k: v.format(region=region, account=account) for k, v in given.items()}
    # A parameter of the case the template (still) lacks is left out; the conditions check below
    # still requires every condition true in "every option".
    with open(args.template, encoding="utf-8") as f:
        declared = set((yaml.load(f, Loader=yaml.BaseLoader) or {}).get("Parameters", {}))
    given = {k: v for k, v in given.items() if k in declared}
    client = clients(args.endpoint, region, account)
    s3, cfn = client("s3"), client("cloudformation")

    bucket, key = f"shardwise-code-{account}", "functions/bootstrap.zip"
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key=key, Body=code_zip())

    cmd = [sys.executable, os.path.join(HERE, "sam-translate.py"), "--code-uri", f"s3://{bucket}/{key}",
           "--region", region, "--account", account]
    for k, v in given.items():
        cmd += ["--param", f"{k}={v}"]
    out = subprocess.run(cmd + [args.template], capture_output=True, text=True)
    if out.returncode != 0:
        failures.add(case, f"translate: {out.stderr.strip()}")
        return
    template = json.loads(out.stdout)
    stack = "shardwise-deploy-test"
    params = param_values(template, given, failures, case)
    pseudo = {"AWS::Region": region, "AWS::AccountId": account, "AWS::Partition": "aws",
              "AWS::StackName": stack, "AWS::URLSuffix": "amazonaws.com"}
    try:
        conds = conditions(template, params, pseudo)
    except ValueError as e:
        failures.add(case, f"conditions: {e}")
        return
    if case == "every option":
        for name, on in conds.items():
            if not on:
                failures.add(case, f"condition {name} is false: set the parameter it tests in CASES, so that "
                                   f"every conditional resource is deployed")

    resources = template["Resources"]
    created, absent = {}, {}
    for lid, res in resources.items():
        c = res.get("Condition")
        if c is not None and c not in conds:
            failures.add(case, f"{lid}: Condition {c} is not defined")
        elif c is not None and not conds[c]:
            absent[lid] = c
        else:
            created[lid] = resolve_ifs(res, conds, lid, failures, case)
    outputs = {}
    for name, o in template.get("Outputs", {}).items():
        c = o.get("Condition")
        if c is None or conds.get(c):
            outputs[name] = resolve_ifs(o, conds, f"Outputs.{name}", failures, case)

    # Every reference, before anything is deployed.
    n_failed = len(failures)
    for lid, res in created.items():
        check_refs(res.get("Properties", {}), lid, created, absent, params, failures, case)
        deps = res.get("DependsOn", [])
        for d in [deps] if isinstance(deps, str) else deps:
            if d not in created:
                failures.add(case, f"{lid}: DependsOn {d}, which is not created with these parameters")
    for name, o in outputs.items():
        check_refs(o.get("Value"), f"Outputs.{name}", created, absent, params, failures, case)
    if len(failures) > n_failed:
        return

    modeled = get_model_map()
    stubbed = {lid for lid, res in created.items() if res["Type"] not in modeled}
    # A resource naming one moto does not model cannot be created by moto either (moto resolves the
    # name to nothing and fails): it joins them, created through the service APIs or, when a name in
    # it stays unresolved, checked offline only.
    while True:
        more = {lid for lid, res in created.items() if lid not in stubbed and ref_targets(res.get("Properties", {})) & stubbed}
        if not more:
            break
        stubbed |= more

    # moto's Ref of an AWS::Events::EventBus gives its model object, not the bus name CloudFormation
    # gives: put the name in, as CloudFormation resolves it.
    buses = {lid: res["Properties"]["Name"] for lid, res in created.items() if res["Type"] == "AWS::Events::EventBus"}

    def fix_bus_refs(v):
        if isinstance(v, dict):
            if len(v) == 1 and v.get("Ref") in buses:
                return buses[v["Ref"]]
            return {k: fix_bus_refs(x) for k, x in v.items()}
        if isinstance(v, list):
            return [fix_bus_refs(x) for x in v]
        return v

    # Each intrinsic node of each resource becomes an output, so that moto resolves it. Parameters of
    # list type are resolved here (an output is a string); attributes of types moto does not model
    # cannot be resolved by moto and are left to the reference check above.
    nodes = []
    for res in created.values():
        collect(res.get("Properties", {}), nodes)
    resolved, moto_outputs, unresolvable = {}, {}, 0
    for node in nodes:
        k = json.dumps(node, sort_keys=True)
        if k in resolved or k in {json.dumps(v["Value"], sort_keys=True) for v in moto_outputs.values()}:
            continue
        ref = node.get("Ref")
        if ref in params:  # a parameter's value, possibly empty or a list (an output is one string)
            resolved[k] = params[ref]
            continue
        if ref_targets(node) & stubbed:
            unresolvable += 1
            continue
        moto_outputs[f"Resolve{len(moto_outputs)}"] = {"Value": fix_bus_refs(node)}
    sent_outputs = {name: o for name, o in outputs.items() if not ref_targets(o.get("Value")) & stubbed}
    sent = dict(template)
    # With the Ref gone, moto no longer knows the bus comes first: it creates in template order.
    order = sorted(created, key=lambda lid: lid not in buses)
    # The conditions are decided above (the resources left are those they create), so none is sent.
    sent["Resources"] = {lid: {k: v for k, v in fix_bus_refs(created[lid]).items() if k != "Condition"}
                         for lid in order if lid not in stubbed}
    sent_outputs = {name: {k: v for k, v in o.items() if k != "Condition"} for name, o in sent_outputs.items()}
    sent["Outputs"] = {**sent_outputs, **moto_outputs}
    sent.pop("Conditions", None)

    try:
        cfn.create_stack(StackName=stack, TemplateBody=json.dumps(sent), Capabilities=["CAPABILITY_IAM"],
                         Parameters=[{"ParameterKey": k, "ParameterValue": v} for k, v in given.items()])
    except Exception as e:  # moto answers a template it cannot create with an error or an HTTP 500
        failures.add(case, f"CreateStack on moto: {e} (moto's log has the cause)")
        return
    desc = cfn.describe_stacks(StackName=stack)["Stacks"][0]
    if desc["StackStatus"] != "CREATE_COMPLETE":
        failures.add(case, f"stack status {desc['StackStatus']}: {desc.get('StackStatusReason')}")
        return
    got_outputs = {o["OutputKey"]: o.get("OutputValue") for o in desc.get("Outputs", [])}
    for name, o in moto_outputs.items():
        v = got_outputs.get(name)
        original = json.dumps(o["Value"])
        # A value built from parameters alone may be empty; one naming a resource may not.
        if v is None or str(v).startswith("<moto.") or (v in ("", "None") and ref_targets(o["Value"]) & set(created)):
            failures.add(case, f"{original} did not resolve (moto gave {v!r})")
        # Every node sent as this value: once fixed, a Ref to the bus is the bus's Name (an Fn::Sub
        # of the stack's name, when EventBusName is empty), and both resolve to the same name.
        for n in nodes:
            if fix_bus_refs(n) == o["Value"]:
                resolved[json.dumps(n, sort_keys=True)] = v
    for name in sent_outputs:
        if got_outputs.get(name) in (None, "", "None"):
            failures.add(case, f"output {name} did not resolve")

    physical, types = {}, {}
    token = None
    while True:
        page = cfn.list_stack_resources(StackName=stack, **({"NextToken": token} if token else {}))
        for r in page["StackResourceSummaries"]:
            physical[r["LogicalResourceId"]] = r.get("PhysicalResourceId")
            types[r["LogicalResourceId"]] = r["ResourceType"]
            if r["ResourceStatus"] != "CREATE_COMPLETE":
                failures.add(case, f"{r['LogicalResourceId']}: status {r['ResourceStatus']}")
        token = page.get("NextToken")
        if not token:
            break
    for lid, res in created.items():
        if lid in stubbed:
            continue
        if lid not in physical:
            failures.add(case, f"{lid} ({res['Type']}) was not created")
        elif types[lid] != res["Type"]:
            failures.add(case, f"{lid}: type {types[lid]}, want {res['Type']}")
    for lid in physical:
        if lid not in created:
            failures.add(case, f"{lid!r} ({types[lid]}, {physical[lid]}): created, but the template does not "
                               f"create it with these parameters")

    deployed = {lid: substitute(res, resolved) for lid, res in created.items()}
    checked = check_services(case, client, deployed, physical, stubbed, failures, created, resolved)
    check_domain_grants(case, client, deployed, physical, given.get("OpenSearchDomainArns", ""), failures)
    summary.append(
        f"{case}: {len(created)} resources ({len(created) - len(stubbed)} created by moto's CloudFormation, "
        f"{len(stubbed)} of types it does not model: {', '.join(sorted({created[s]['Type'] for s in stubbed}))}); "
        f"{len(absent)} left out by false conditions; {len(resolved)} references resolved by moto, "
        f"{unresolvable} naming unmodeled resources checked offline only; checked: "
        + ", ".join(f"{n} {what}" for what, n in checked.items())
        + f"; not kept by moto, so not compared: {', '.join(sorted(f'{t.split(chr(58))[-1]}.{f}' for t, f in MOTO_DROPS))}")
    cfn.delete_stack(StackName=stack)


def strings(v):
    if isinstance(v, str):
        yield v
    elif isinstance(v, dict):
        for x in v.values():
            yield from strings(x)
    elif isinstance(v, list):
        for x in v:
            yield from strings(x)


def props(res):
    return res.get("Properties", {})


def check_domain_grants(case, client, deployed, physical, domains, failures):
    """Every role that may call OpenSearch is granted its requests on each domain of
    OpenSearchDomainArns, the same paths on each, and on nothing else; with no domain, no role has
    an OpenSearch grant."""
    iam = client("iam")
    want = [d for d in domains.split(",") if d]
    for lid, res in sorted(deployed.items()):
        if res["Type"] != "AWS::IAM::Role" or lid not in physical:
            continue
        paths = {}  # domain ARN -> the (action, path) pairs granted on it
        for name in iam.list_role_policies(RoleName=physical[lid])["PolicyNames"]:
            doc = json.loads(norm(iam.get_role_policy(RoleName=physical[lid], PolicyName=name)["PolicyDocument"]))
            for st in doc.get("Statement", []):
                actions = st.get("Action", [])
                actions = [actions] if isinstance(actions, str) else actions
                if not any(a.startswith("es:") for a in actions):
                    continue
                arns = st.get("Resource", [])
                for arn in [arns] if isinstance(arns, str) else arns:
                    domain = next((d for d in want if arn.startswith(d + "/")), None)
                    if domain is None:
                        failures.add(case, f"{lid}: {actions} granted on {arn}, under none of the domains {want}")
                        continue
                    paths.setdefault(domain, set()).update((a, arn[len(domain):]) for a in actions)
        if not paths:
            continue
        if sorted(paths) != sorted(want):
            failures.add(case, f"{lid}: OpenSearch grants on {sorted(paths)}, want on each of {want}")
        elif len({frozenset(p) for p in paths.values()}) != 1:
            failures.add(case, f"{lid}: the domains are granted different requests: {paths}")


def check_services(case, client, deployed, physical, stubbed, failures, created, resolved):
    iam, events, sfn, lam = client("iam"), client("events"), client("stepfunctions"), client("lambda")
    cw, sns, sqs, ddb, logs = client("cloudwatch"), client("sns"), client("sqs"), client("dynamodb"), client("logs")
    checked = {}

    def count(what):
        checked[what] = checked.get(what, 0) + 1

    def fail(lid, msg):
        failures.add(case, f"{lid}: {msg}")

    # The ARNs (and names) of what the stack created, as the services report them: whatever the
    # template points a rule, a role, an alarm or the state machine at must be among them.
    own = {"function": set(), "state machine": set(), "topic": set(), "queue": set(), "table": set(),
           "bus": set(), "role": set(), "function name": set(), "queue name": set()}
    for lid, res in deployed.items():
        pid, t = physical.get(lid), res["Type"]
        if lid in stubbed or pid is None:
            continue
        if t == "AWS::Lambda::Function":
            own["function"].add(lam.get_function(FunctionName=pid)["Configuration"]["FunctionArn"])
            own["function name"].add(pid)
        elif t == "AWS::StepFunctions::StateMachine":
            own["state machine"].add(pid)
        elif t == "AWS::SNS::Topic":
            own["topic"].add(pid)
        elif t == "AWS::SQS::Queue":
            own["queue"].add(sqs.get_queue_attributes(QueueUrl=pid, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"])
            own["queue name"].add(pid.rsplit("/", 1)[-1])
        elif t == "AWS::DynamoDB::Table":
            own["table"].add(ddb.describe_table(TableName=pid)["Table"]["TableArn"])
        elif t == "AWS::Events::EventBus":
            own["bus"].add(events.describe_event_bus(Name=props(res)["Name"])["Arn"])
        elif t == "AWS::IAM::Role":
            own["role"].add(iam.get_role(RoleName=pid)["Role"]["Arn"])
    targetable = own["function"] | own["state machine"] | own["topic"] | own["queue"]

    def own_resource(arn):
        """Whether a policy's resource ARN is one the stack created, or under one (table/x/index/*).
        ARNs of other services (OpenSearch, SSM parameters, logs) are the parameters' business."""
        service = arn.split(":")[2] if arn.count(":") >= 5 else ""
        if service not in ("dynamodb", "events", "lambda", "states", "sqs", "sns"):
            return True
        everything = set().union(*(v for k, v in own.items() if "name" not in k))
        # SAM's policy templates grant function:<name>* (the name and its versions and aliases).
        exact = arn[:-1] if arn.endswith("*") and not arn.endswith("/*") and not arn.endswith(":*") else arn
        return any(exact == a or arn.startswith(a + "/") or arn.startswith(a + ":") for a in everything)

    for lid, res in sorted(deployed.items()):
        p, t = props(res), res["Type"]
        if lid in stubbed:
            continue
        pid = physical.get(lid)
        if pid is None:
            continue
        if t == "AWS::IAM::Role":
            count("roles")
            role = iam.get_role(RoleName=pid)["Role"]
            if norm(role["AssumeRolePolicyDocument"]) != norm(p["AssumeRolePolicyDocument"]):
                fail(lid, f"trust policy {role['AssumeRolePolicyDocument']}, want {p['AssumeRolePolicyDocument']}")
            want = {pol["PolicyName"]: pol["PolicyDocument"] for pol in p.get("Policies", [])}
            got = iam.list_role_policies(RoleName=pid)["PolicyNames"]
            if sorted(got) != sorted(want):
                fail(lid, f"inline policies {sorted(got)}, want {sorted(want)}")
            for name in set(got) & set(want):
                doc = iam.get_role_policy(RoleName=pid, PolicyName=name)["PolicyDocument"]
                if norm(doc) != norm(want[name]):
                    fail(lid, f"policy {name}: {norm(doc)}, want {norm(want[name])}")
                for st in json.loads(norm(doc)).get("Statement", []):
                    arns = st.get("Resource", [])
                    for arn in [arns] if isinstance(arns, str) else arns:
                        if not own_resource(arn):
                            fail(lid, f"policy {name} grants {st.get('Action')} on {arn}, which the stack did not create")
            attached = [] if (t, "ManagedPolicyArns") in MOTO_DROPS else sorted(a["PolicyArn"] for a in iam.list_attached_role_policies(RoleName=pid)["AttachedPolicies"])
            if (t, "ManagedPolicyArns") not in MOTO_DROPS and attached != sorted(p.get("ManagedPolicyArns", [])):
                fail(lid, f"managed policies {attached}, want {sorted(p.get('ManagedPolicyArns', []))}")
        elif t == "AWS::Events::Rule":
            count("rules")
            bus = p.get("EventBusName", "default")
            name = pid.split("|")[-1]
            rule = events.describe_rule(Name=name, EventBusName=bus)
            if "EventPattern" in p and norm(rule.get("EventPattern", "null")) != norm(p["EventPattern"]):
                fail(lid, f"pattern {rule.get('EventPattern')}, want {json.dumps(p['EventPattern'])}")
            if rule.get("ScheduleExpression") != p.get("ScheduleExpression"):
                fail(lid, f"schedule {rule.get('ScheduleExpression')}, want {p.get('ScheduleExpression')}")
            if rule.get("State", "ENABLED") != p.get("State", "ENABLED"):
                fail(lid, f"state {rule.get('State')}, want {p.get('State', 'ENABLED')}")
            targets = {x["Id"]: x for x in events.list_targets_by_rule(Rule=name, EventBusName=bus)["Targets"]}
            want = {x["Id"]: x for x in p.get("Targets", [])}
            if sorted(targets) != sorted(want):
                fail(lid, f"targets {sorted(targets)}, want {sorted(want)}")
            for tid, x in targets.items():
                if x["Arn"] not in targetable:
                    fail(lid, f"target {tid} is {x['Arn']}, which the stack did not create")
                dlq = x.get("DeadLetterConfig", {}).get("Arn")
                if dlq is not None and dlq not in own["queue"]:
                    fail(lid, f"target {tid}'s dead-letter queue {dlq} is no queue of the stack")
                if x.get("RoleArn") is not None and x["RoleArn"] not in own["role"]:
                    fail(lid, f"target {tid}'s role {x['RoleArn']} is no role of the stack")
            for tid in set(targets) & set(want):
                for field in ("Arn", "RoleArn", "RetryPolicy", "DeadLetterConfig", "Input", "InputPath"):
                    if targets[tid].get(field) != want[tid].get(field):
                        fail(lid, f"target {tid} {field}: {targets[tid].get(field)}, want {want[tid].get(field)}")
        elif t == "AWS::StepFunctions::StateMachine":
            count("state machines")
            sm = sfn.describe_state_machine(stateMachineArn=pid)
            if sm["roleArn"] != p["RoleArn"]:
                fail(lid, f"role {sm['roleArn']}, want {p['RoleArn']}")
            if (t, "StateMachineType") not in MOTO_DROPS and sm["type"] != p.get("StateMachineType", "STANDARD"):
                fail(lid, f"type {sm['type']}, want {p.get('StateMachineType', 'STANDARD')}")
            if norm(sm["definition"]) != norm(p["DefinitionString"]):
                fail(lid, "definition differs from the template's")
            if sm["roleArn"] not in own["role"]:
                fail(lid, f"role {sm['roleArn']} is no role of the stack")
            for arn in strings(json.loads(sm["definition"])):
                if arn.startswith("arn:aws:lambda:") and not any(arn == f or arn.startswith(f + ":") for f in own["function"]):
                    fail(lid, f"the definition invokes {arn}, which the stack did not create")
            want_log = p.get("LoggingConfiguration")
            if want_log and (t, "LoggingConfiguration") not in MOTO_DROPS:
                got_log = sm.get("loggingConfiguration", {})
                if got_log.get("level") != want_log["Level"] or got_log.get("includeExecutionData") != want_log.get("IncludeExecutionData", False):
                    fail(lid, f"logging {got_log}, want {want_log}")
                got_dest = [d["cloudWatchLogsLogGroup"]["logGroupArn"] for d in got_log.get("destinations", [])]
                want_dest = [d["CloudWatchLogsLogGroup"]["LogGroupArn"] for d in want_log.get("Destinations", [])]
                if got_dest != want_dest:
                    fail(lid, f"log destinations {got_dest}, want {want_dest}")
        elif t == "AWS::Lambda::Function":
            count("functions")
            fn = lam.get_function(FunctionName=pid)
            cfg = fn["Configuration"]
            for field, default in (("Role", None), ("Runtime", None), ("Handler", None), ("MemorySize", 128),
                                   ("Timeout", 3), ("Architectures", ["x86_64"])):
                if (t, field) in MOTO_DROPS:
                    continue
                if field == "Role" and cfg.get(field) not in own["role"]:
                    fail(lid, f"role {cfg.get(field)} is no role of the stack")
                if cfg.get(field) != p.get(field, default):
                    fail(lid, f"{field} {cfg.get(field)}, want {p.get(field, default)}")
            env = cfg.get("Environment", {}).get("Variables", {})
            if env != p.get("Environment", {}).get("Variables", {}):
                fail(lid, f"environment {env}, want {p.get('Environment', {}).get('Variables', {})}")
            want_rc = p.get("ReservedConcurrentExecutions")
            got_rc = fn.get("Concurrency", {}).get("ReservedConcurrentExecutions")
            if want_rc is not None and str(got_rc) != str(want_rc):
                fail(lid, f"reserved concurrency {got_rc}, want {want_rc}")
            want_vpc = p.get("VpcConfig")
            if want_vpc:
                got_vpc = cfg.get("VpcConfig", {})
                if sorted(got_vpc.get("SubnetIds", [])) != sorted(want_vpc["SubnetIds"]) or \
                        sorted(got_vpc.get("SecurityGroupIds", [])) != sorted(want_vpc["SecurityGroupIds"]):
                    fail(lid, f"VPC {got_vpc}, want {want_vpc}")
        elif t == "AWS::DynamoDB::Table":
            count("tables")
            table = ddb.describe_table(TableName=pid)["Table"]
            if sorted((k["AttributeName"], k["KeyType"]) for k in table["KeySchema"]) != \
                    sorted((k["AttributeName"], k["KeyType"]) for k in p["KeySchema"]):
                fail(lid, f"keys {table['KeySchema']}, want {p['KeySchema']}")
            billing = table.get("BillingModeSummary", {}).get("BillingMode", "PROVISIONED")
            if billing != p.get("BillingMode", "PROVISIONED"):
                fail(lid, f"billing {billing}, want {p.get('BillingMode')}")
        elif t == "AWS::CloudWatch::Dashboard":
            count("dashboards")
            body = cw.get_dashboard(DashboardName=pid)["DashboardBody"]
            if norm(body) != norm(p["DashboardBody"]):
                fail(lid, "dashboard body differs from the template's")
        elif t == "AWS::Logs::LogGroup":
            count("log groups")
            groups = [g for g in logs.describe_log_groups(logGroupNamePrefix=pid)["logGroups"] if g["logGroupName"] == pid]
            if not groups:
                fail(lid, f"log group {pid} does not exist")
            elif groups[0].get("retentionInDays") != p.get("RetentionInDays"):
                fail(lid, f"retention {groups[0].get('retentionInDays')}, want {p.get('RetentionInDays')}")

    topics = {t["TopicArn"] for t in sns.list_topics()["Topics"]}
    # What moto's CloudFormation does not model, created with the resolved properties through the
    # services' APIs, as CloudFormation would, then read back.
    # Those naming others of them come after those, and see the values CloudFormation's Ref gives.
    pending, order = set(stubbed), []
    while pending:
        ready = sorted(lid for lid in pending if not ref_targets(props(created[lid])) & (pending - {lid}))
        if not ready:
            for lid in sorted(pending):
                fail(lid, "refers, in a cycle, to resources moto's CloudFormation does not model")
            break
        order += ready
        pending -= set(ready)
    for lid in order:
        res = substitute(created[lid], resolved)
        p, t = props(res), res["Type"]
        unresolved = []
        collect(p, unresolved)
        if unresolved:
            count(f"offline only: {lid}")
            continue
        try:
            if t == "AWS::CloudWatch::Alarm":
                count("alarms")
                # A Number parameter reaches a property as a string; the API takes numbers.
                kw = dict(p)
                for field, kind in (("Threshold", float), ("Period", int), ("EvaluationPeriods", int),
                                    ("DatapointsToAlarm", int)):
                    if field in kw:
                        kw[field] = kind(kw[field])
                p = kw
                cw.put_metric_alarm(**kw)
                got = cw.describe_alarms(AlarmNames=[p["AlarmName"]])["MetricAlarms"]
                if len(got) != 1:
                    fail(lid, f"alarm {p['AlarmName']} not found after PutMetricAlarm")
                    continue
                a = got[0]
                for field in ("MetricName", "Namespace", "Statistic", "Period", "EvaluationPeriods", "Threshold",
                              "ComparisonOperator", "TreatMissingData", "DatapointsToAlarm"):
                    if field in p and a.get(field) != p[field]:
                        fail(lid, f"{field} {a.get(field)}, want {p[field]}")
                for action in a.get("AlarmActions", []) + a.get("OKActions", []):
                    if action.startswith("arn:aws:sns:") and action not in topics:
                        fail(lid, f"action {action} is no topic of the stack")
                for d in a.get("Dimensions", []):
                    if not d.get("Value"):
                        fail(lid, f"dimension {d.get('Name')} has no value")
                    # A dimension naming one of the stack's own resources must name one it created.
                    mine = {("AWS/States", "StateMachineArn"): own["state machine"],
                            ("AWS/SQS", "QueueName"): own["queue name"],
                            ("AWS/Lambda", "FunctionName"): own["function name"]}.get((a.get("Namespace"), d.get("Name")))
                    if mine is not None and d.get("Value") not in mine:
                        fail(lid, f"dimension {d['Name']}={d.get('Value')} names nothing the stack created")
            elif t == "AWS::SQS::QueuePolicy":
                count("queue policies")
                for url in p["Queues"]:
                    sqs.set_queue_attributes(QueueUrl=url, Attributes={"Policy": json.dumps(p["PolicyDocument"])})
                    got = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["Policy"])["Attributes"]["Policy"]
                    if norm(got) != norm(p["PolicyDocument"]):
                        fail(lid, f"queue {url} policy {got}")
            elif t == "AWS::SNS::TopicPolicy":
                count("topic policies")
                for arn in p["Topics"]:
                    if arn not in topics:
                        fail(lid, f"topic {arn} does not exist")
                        continue
                    sns.set_topic_attributes(TopicArn=arn, AttributeName="Policy", AttributeValue=json.dumps(p["PolicyDocument"]))
            elif t == "AWS::SNS::Subscription":
                count("subscriptions")
                if p["TopicArn"] not in topics:
                    fail(lid, f"topic {p['TopicArn']} does not exist")
                    continue
                sns.subscribe(TopicArn=p["TopicArn"], Protocol=p["Protocol"], Endpoint=p["Endpoint"])
            elif t == "AWS::Lambda::EventInvokeConfig":
                count("event invoke configs")
                kw = {k: v for k, v in p.items() if k in ("FunctionName", "Qualifier", "MaximumRetryAttempts",
                                                           "MaximumEventAgeInSeconds", "DestinationConfig")}
                lam.put_function_event_invoke_config(**kw)
            elif t == "AWS::Lambda::Alias":
                count("aliases")
                alias = lam.create_alias(Name=p["Name"], FunctionName=p["FunctionName"], FunctionVersion=p["FunctionVersion"])
                resolved[json.dumps({"Ref": lid}, sort_keys=True)] = alias["AliasArn"]
            elif t == "AWS::Lambda::Url":
                count("function URLs")
                kw = {"FunctionName": p["TargetFunctionArn"], "AuthType": p["AuthType"]}
                if "Qualifier" in p:
                    kw["Qualifier"] = p["Qualifier"]
                lam.create_function_url_config(**kw)
            elif t == "AWS::Lambda::Permission":
                count("permissions")
                kw = {"FunctionName": p["FunctionName"], "StatementId": lid, "Action": p["Action"],
                      "Principal": p["Principal"]}
                for field in ("SourceArn", "SourceAccount", "FunctionUrlAuthType"):
                    if field in p:
                        kw[field] = p[field]
                lam.add_permission(**kw)
            else:
                fail(lid, f"{t}: moto's CloudFormation does not model it and this check creates it no other way; "
                          f"add it to cfn-deploy-check.py")
        except Exception as e:  # a botocore error names the call and moto's reason
            fail(lid, f"{t} through the service API: {e}")
    return checked


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--endpoint", required=True, help="moto server, e.g. http://127.0.0.1:5055")
    ap.add_argument("--template", default=os.path.join(HERE, "..", "template.yaml"))
    ap.add_argument("--region", default="us-east-1")
    args = ap.parse_args()
    failures, summary = Failures(), []
    for case, given in CASES.items():
        run_case(case, given, args, failures, summary)
    for line in summary:
        print(line)
    if failures:
        print(f"{len(failures)} failures:", file=sys.stderr)
        for f in failures:
            print("  " + f, file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
