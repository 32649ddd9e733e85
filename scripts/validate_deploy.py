#!/usr/bin/env python3
"""Validates docker-compose.yml, the Kubernetes manifests and the Grafana dashboard without a
Docker engine or a cluster. scripts/validate-deploy installs what this needs and runs it.

Checks, each of which fails on a mistake:
- docker-compose.yml: docker-compose's own parser (`docker-compose config -q`); the services
  the system needs; every Liveline service runs a real `liveline` subcommand with options it
  accepts; every LIVELINE_* variable is a setting the code reads; healthchecks on /healthz;
  the image (deploy/Dockerfile) builds `liveline` as scripts/build-workers' release build,
  which the benchmarks measure.
- Kubernetes: every overlay rendered with kustomize. Built-in kinds against Kubernetes' own
  schemas with kubernetes-validate in strict mode (unknown fields fail), for the oldest and
  newest Kubernetes versions supported. Custom resources (ScaledObject,
  TriggerAuthentication, RabbitmqCluster) against deploy/schemas/, Liveline's own schemas
  written from the upstream CRDs with additionalProperties false. Then what no schema
  knows: names that must refer to each other, probes, limits, non-root, read-only mounts,
  grace periods, the Deployments' commands, and the shards: each stage's shard queues in
  deploy/rabbitmq/definitions.json, the shard counts every role that declares the topology
  is given (LIVELINE_TRANSLATE_SHARDS, LIVELINE_SEND_SHARDS; in docker-compose.yml too), a
  KEDA trigger whose queue regex matches exactly its stage's shards, and no more replicas
  than shards.
- deploy/grafana/liveline.json: parses, and every liveline_* metric it queries is recorded
  by the code.
- --self-test (also run after a plain run): breaks copies of the files one way at a time
  (misspelled fields in a ScaledObject, a Deployment, a RabbitmqCluster, ...) and fails
  unless the checks above catch every one.

The `liveline` command line comes from the built binary (`--experimental-dump-help`) when
.build/debug/liveline or .build/release/liveline is newer than Sources/liveline/, and is
otherwise read from the ArgumentParser declarations in Sources/liveline/*.swift.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import jsonschema
import kubernetes_validate
import yaml

# --- What the manifests must agree with -------------------------------------------------

# Kubernetes versions the manifests are checked against: the oldest supported (preStop
# `sleep` and matchLabelKeys are on by default from 1.30) and the newest schemas bundled.
KUBERNETES_VERSIONS = ["1.30.0", "1.37.0"]

CUSTOM_RESOURCE_SCHEMAS = {
    ("keda.sh/v1alpha1", "ScaledObject"): "scaledobject.schema.json",
    ("keda.sh/v1alpha1", "TriggerAuthentication"): "triggerauthentication.schema.json",
    ("rabbitmq.com/v1beta1", "RabbitmqCluster"): "rabbitmqcluster.schema.json",
}

# Secrets the operator creates (docs/operators.md, "Deployment"); a manifest naming any other fails.
EXTERNAL_SECRETS = {
    "liveline-apns": {"team-id", "key-id", "key.p8"},
    "liveline-postgres": {"url"},
    # url: the workers' amqp:// URL; management-url: the http:// URL of the management API,
    # where KEDA sums the depths of a stage's shards.
    "liveline-amqp": {"url", "management-url"},
    "liveline-api": {"jwt-hs256-secret"},
    "liveline-rabbitmq-users": {"users.json"},
}

# Each Deployment's role, its autoscaler, and the shortest grace period that covers its
# drain on SIGTERM (the manifests explain each figure):
# - sender: a send in flight may take a 10 s connect and a 30 s APNs request, then the
#   outcome is recorded, the trace committed, the job acked and the confirms awaited;
# - translator: the batches it holds finish their store transaction and confirms;
# - api: a 5 s preStop pause, then the requests in flight.
COMPONENTS = {
    "liveline-api": {"role": "api", "autoscaler": "HorizontalPodAutoscaler", "grace": 15},
    "liveline-translator": {"role": "translator", "autoscaler": "ScaledObject", "grace": 30, "stage": "liveline.translate"},
    "liveline-sender": {"role": "sender", "autoscaler": "ScaledObject", "grace": 45, "stage": "liveline.send"},
}

# The sharded stages, each the setting of its shard count. A stage of N shards is the quorum
# queues <stage>.<i>of<N>, i = 0..N-1, each with a single active consumer; each worker leases
# a shard with an exclusive queue <shard>.lease, which the broker has only at run time.
SHARDED_STAGES = {"liveline.translate": "LIVELINE_TRANSLATE_SHARDS", "liveline.send": "LIVELINE_SEND_SHARDS"}
SHARD_QUEUE = re.compile(r"^(liveline\.[a-z]+)\.(\d+)of(\d+)$")
DEFAULT_SHARDS = "1"  # what a role that is not given a count uses
# The key of Secret liveline-amqp that holds the broker URL a KEDA trigger's protocol needs.
BROKER_URL_KEYS = {"http": "management-url", "amqp": "url"}

# The services docker-compose.yml must run, and the subcommand of each Liveline one.
COMPOSE_SERVICES = {
    "rabbitmq": None,
    "postgres": None,
    "api": "api",
    "translator": "translator",
    "sender": "sender",
    "apns-sim": "apns-sim",
    "demo": "demo",
}
COMPOSE_HEALTHZ = {"api", "translator", "sender"}

# The port each role listens on: its setting, or the role's own default when unset
# (`liveline.api.port`; `LivelineRole.defaultOpsPort` for the workers' ops port). Probes,
# healthchecks, Services and scrape annotations must name this port.
ROLE_PORTS = {"api": ("LIVELINE_API_PORT", 8080), "translator": ("LIVELINE_OPS_PORT", 9090), "sender": ("LIVELINE_OPS_PORT", 9091)}


def listening_port(role: str, environment: dict) -> int:
    variable, default = ROLE_PORTS[role]
    value = environment.get(variable)
    return int(value) if value is not None and str(value).isdigit() else default

# Announced but not in the code yet. Used only while the code lacks them, with a warning,
# so the files can be written ahead of the Swift side; delete an entry once it lands.
PENDING_SUBCOMMANDS: dict = {}
PENDING_SETTINGS: set = set()
PENDING_METRICS: set = set()


class Report:
    """Counts checks; prints failures as they happen, and every check with --verbose."""

    def __init__(self, quiet: bool = False, verbose: bool = False):
        self.failures: list[str] = []
        self.warnings: dict[str, list[str]] = {}  # text -> where
        self.passed = 0
        self.quiet = quiet
        self.verbose = verbose

    def check(self, ok: bool, what: str, why: str = "") -> bool:
        if ok:
            self.passed += 1
            if self.verbose and not self.quiet:
                print(f"  ok    {what}")
        else:
            self.failures.append(f"{what}: {why}" if why else what)
            if not self.quiet:
                print(f"  FAIL  {what}: {why}")
        return ok

    def fail(self, what: str, why: str) -> None:
        self.check(False, what, why)

    def warn(self, text: str, where: str = "") -> None:
        places = self.warnings.setdefault(text, [])
        if where and where not in places:
            places.append(where)

    def section(self, title: str) -> None:
        """Prints the tally so far and starts a section."""
        if not self.quiet:
            print(f"validate-deploy: {title}")


# --- The liveline command line ----------------------------------------------------------


def kebab(name: str) -> str:
    """ArgumentParser's name for a property or type: certificateOut -> certificate-out."""
    out = re.sub(r"([a-z0-9])([A-Z])", r"\1-\2", name)
    out = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1-\2", out)
    return out.lower()


class Command:
    def __init__(self, name: str):
        self.name = name
        self.options: dict[str, dict] = {}  # "--name" / "-n" -> {"value": bool, "upToNext": bool}
        self.required: set[str] = set()  # preferred names of required options
        self.positionals = 0
        self.subcommands: dict[str, Command] = {}


def cli_from_dump(dump: dict) -> Command:
    def build(info: dict) -> Command:
        command = Command(info["commandName"])
        for argument in info.get("arguments") or []:
            kind = argument["kind"]
            if kind == "positional":
                command.positionals += 1
                continue
            names = []
            for name in argument.get("names") or []:
                prefix = "-" if name["kind"] in ("short", "longWithSingleDash") else "--"
                names.append(prefix + name["name"])
            spec = {"value": kind == "option", "upToNext": argument.get("parsingStrategy") == "upToNextOption"}
            for name in names:
                command.options[name] = spec
            if kind == "option" and not argument.get("isOptional") and names:
                command.required.add(names[0])
        for sub in info.get("subcommands") or []:
            child = build(sub)
            command.subcommands[child.name] = child
            for alias in sub.get("aliases") or []:
                command.subcommands[alias] = child
        return command

    return build(dump["command"])


ATTRIBUTE = re.compile(
    r"@(Option|Flag|OptionGroup|Argument)\b"
    r"(\((?:[^()\"]|\"(?:[^\"\\]|\\.)*\"|\((?:[^()\"]|\"(?:[^\"\\]|\\.)*\")*\))*\))?"
    r"\s*(?:(?:public|private|internal|fileprivate)\s+)?var\s+(\w+)\s*(?::\s*([^=\n{]+?))?\s*(?:=\s*([^\n]+?))?\s*$",
    re.MULTILINE,
)


SWIFT_NOISE = re.compile(r'"""[\s\S]*?"""|"(?:[^"\\\n]|\\.)*"|//[^\n]*|/\*[\s\S]*?\*/')


def swift_structs(text: str) -> dict[str, str]:
    """Each struct of a Swift file by name, with its own body: the text between its braces
    less the bodies of the structs nested in it."""
    masked = SWIFT_NOISE.sub(lambda m: " " * len(m.group(0)), text)
    spans = []
    for match in re.finditer(r"\bstruct\s+(\w+)[^{]*\{", masked):
        depth, index = 1, match.end()
        while depth and index < len(masked):
            depth += {"{": 1, "}": -1}.get(masked[index], 0)
            index += 1
        spans.append((match.group(1), match.start(), match.end(), index))
    structs = {}
    for name, start, body_start, end in spans:
        own, cursor = [], body_start
        for _, inner_start, _, inner_end in spans:
            if body_start <= inner_start and inner_end <= end and inner_start >= cursor:
                own.append(text[cursor:inner_start])
                cursor = inner_end
        own.append(text[cursor:end])
        structs[name] = text[start:body_start] + "".join(own)
    return structs


def cli_from_source(folder: Path) -> Command:
    """Reads the ArgumentParser declarations of Sources/liveline: enough of them to know each
    subcommand's options (names, whether they take a value, whether they are required)."""
    structs: dict[str, str] = {}
    main = None
    for path in sorted(folder.glob("*.swift")):
        text = path.read_text()
        found = swift_structs(text)
        structs.update(found)
        marked = re.search(r"^@main\s+(?:public\s+)?struct\s+(\w+)", text, re.MULTILINE)
        if marked:
            main = marked.group(1)

    def build(type_name: str) -> Command:
        body = structs[type_name]
        name = re.search(r"commandName:\s*\"([^\"]+)\"", body)
        command = Command(name.group(1) if name else kebab(type_name))
        add_arguments(command, type_name)
        subs = re.search(r"subcommands:\s*\[([^\]]*)\]", body)
        if subs:
            for sub in re.findall(r"(\w+)\.self", subs.group(1)):
                child = build(sub)
                command.subcommands[child.name] = child
        return command

    def add_arguments(command: Command, type_name: str) -> None:
        for match in ATTRIBUTE.finditer(structs[type_name]):
            wrapper, arguments, var, declared_type, default = match.groups()
            arguments = arguments or ""
            declared_type = (declared_type or "").strip()
            if wrapper == "OptionGroup":
                add_arguments(command, declared_type)
                continue
            if wrapper == "Argument":
                command.positionals += 1
                continue
            custom = re.search(r"\.customLong\(\"([^\"]+)\"\)", arguments)
            names = ["--" + (custom.group(1) if custom else kebab(var))]
            short = re.search(r"\.(?:customShort|short)\(\"?(\w)?", arguments)
            if ".shortAndLong" in arguments:
                names.append("-" + var[0])
            elif short and short.group(1):
                names.append("-" + short.group(1))
            spec = {"value": wrapper == "Option", "upToNext": ".upToNextOption" in arguments}
            for n in names:
                command.options[n] = spec
            if wrapper == "Flag" and ".prefixedNo" in arguments:
                command.options["--no-" + names[0][2:]] = spec
            optional = declared_type.endswith("?") or default is not None or declared_type.startswith("[")
            if wrapper == "Option" and not optional:
                command.required.add(names[0])

    if main is None:
        raise RuntimeError("no @main struct in Sources/liveline")
    return build(main)


def load_cli(root: Path, report: Report, from_source: bool = False) -> Command:
    sources = root / "Sources" / "liveline"
    newest_source = max(p.stat().st_mtime for p in sources.glob("*.swift"))
    binaries = [] if from_source else [root / ".build/debug/liveline", root / ".build/release/liveline"]
    for binary in binaries:
        if binary.exists() and binary.stat().st_mtime >= newest_source:
            run = subprocess.run([str(binary), "--experimental-dump-help"], capture_output=True, text=True, timeout=60)
            if run.returncode == 0:
                print(f"  info  liveline's options from the built binary {binary.relative_to(root)}")
                cli = cli_from_dump(json.loads(run.stdout))
                break
            report.warn(f"{binary} --experimental-dump-help failed; reading Sources/liveline instead")
    else:
        print("  info  options read from the ArgumentParser declarations in Sources/liveline (no binary newer than them)")
        cli = cli_from_source(sources)
    for name, options in PENDING_SUBCOMMANDS.items():
        if name not in cli.subcommands:
            report.warn(f"`liveline {name}` is not in the code yet; its options are taken as {sorted(options)} until it lands")
            pending = Command(name)
            for option in options:
                pending.options[option] = {"value": True, "upToNext": False}
            cli.subcommands[name] = pending
    return cli


def check_command(cli: Command, argv: list[str]) -> str | None:
    """None when `liveline argv...` parses; otherwise why not."""
    if not argv:
        return "no subcommand (the image's entrypoint is `liveline`)"
    command, rest, path = cli, list(argv), ["liveline"]
    while rest and rest[0] in command.subcommands:
        command = command.subcommands[rest.pop(0)]
        path.append(command.name)
    if command is cli:
        return f"`{argv[0]}` is not a liveline subcommand (have: {', '.join(sorted(cli.subcommands))})"
    full = " ".join(path)
    seen, positionals = set(), 0
    while rest:
        token = rest.pop(0)
        if token.startswith("-") and token != "-":
            name, _, inline = token.partition("=")
            spec = command.options.get(name)
            if spec is None:
                return f"`{full}` has no option {name}"
            seen.add(name)
            if spec["value"]:
                if inline:
                    continue
                if not rest or (rest[0].startswith("-") and not re.match(r"^-\d", rest[0])):
                    return f"{name} needs a value"
                rest.pop(0)
                while spec["upToNext"] and rest and not rest[0].startswith("-"):
                    rest.pop(0)
            elif inline:
                return f"{name} is a flag and takes no value"
        else:
            positionals += 1
    if positionals > command.positionals:
        return f"`{full}` takes {command.positionals} positional argument(s), given {positionals}"
    missing = sorted(command.required - seen)
    if missing:
        return f"`{full}` needs {', '.join(missing)}"
    return None


# --- Settings and metrics the code knows --------------------------------------------------


def known_settings(root: Path) -> set[str]:
    """Every LIVELINE_* variable a setting key in the code maps to (liveline.a.b-c is
    LIVELINE_A_B_C; each secret may also come from a file, …_FILE). Keys are taken from the
    settings' declarations (Sources/LivelineRuntime/Settings/Setting+Catalog.swift), where each
    is the first argument of `Setting(`; an app's keys hold `<name>`, matched by APP_SETTING."""
    text = (root / "Sources/LivelineRuntime/Settings/Setting+Catalog.swift").read_text()
    return set(re.findall(r"Setting\(\s*\"([a-z][a-z0-9-]*(?:\.[a-z0-9-]+)*)\"", text))


# An app's settings, liveline.app.<name>.<key>: declared with `<name>` for the app's name.
APP_SETTING = re.compile(r"LIVELINE_APP_[A-Z0-9]+_(BUNDLE_ID|TEAM_ID|KEY_ID|KEY|KEY_FILE|ENVIRONMENT)")


def setting_variable(key: str) -> str:
    return "LIVELINE_" + re.sub(r"[.-]", "_", key).upper()


def check_variable(name: str, keys: set[str], report: Report, where: str) -> None:
    if not name.startswith("LIVELINE_"):
        return
    variables = {setting_variable(k): k for k in keys}
    variables.update({setting_variable(k) + "_FILE": k for k in keys})
    if name in variables or APP_SETTING.fullmatch(name):
        report.check(True, f"{where}: {name} is a setting")
        return
    pending = {setting_variable(k): k for k in PENDING_SETTINGS}
    if name in pending:
        report.warn(f"{name} (liveline.{pending[name]}) is not read by the code yet", where)
        return
    report.fail(f"{where}: {name}", "no setting of that name (docs/reference/configuration.md, `liveline settings`)")


def known_metrics(root: Path) -> set[str]:
    names = set()
    for path in (root / "Sources").rglob("*.swift"):
        text = path.read_text()
        # Labels are written out whole, also where a helper makes the counter later.
        names.update(re.findall(r"\"(liveline_[a-z0-9_]+)\"", text))
        for match in re.finditer(r"MetricNameDescriptor\(([^)]*)\)", text):
            parts = dict(re.findall(r"(namespace|subsystem|metricName|unitName):\s*\"([^\"]*)\"", match.group(1)))
            name = "_".join(parts[k] for k in ("namespace", "subsystem", "metricName", "unitName") if parts.get(k))
            if name:
                names.add(name)
    return names


# --- Shards -----------------------------------------------------------------------------


def shard_layout(definitions: dict, report: Report | None = None) -> dict[str, list[str]]:
    """Each sharded stage's shard queues in definitions.json, in shard order. With a report,
    checks the layout: every stage sharded, one count per stage, every shard 0..N-1 there, each
    a quorum queue with a single active consumer."""
    found: dict[str, dict[int, dict]] = {}
    counts: dict[str, set[int]] = {}
    for queue in definitions.get("queues", []):
        match = SHARD_QUEUE.match(queue["name"])
        if match and match.group(1) in SHARDED_STAGES:
            stage, index, count = match.group(1), int(match.group(2)), int(match.group(3))
            counts.setdefault(stage, set()).add(count)
            found.setdefault(stage, {})[index] = queue
    layout = {}
    for stage in SHARDED_STAGES:
        stage_counts = sorted(counts.get(stage, set()))
        count = stage_counts[0] if len(stage_counts) == 1 else None
        layout[stage] = [f"{stage}.{i}of{count}" for i in range(count)] if count else []
        if report is None:
            continue
        what = f"rabbitmq/definitions.json: {stage}"
        if not report.check(count is not None, f"{what} is laid out for one shard count", f"shard counts {stage_counts or 'none'}"):
            continue
        shards = found[stage]
        report.check(
            sorted(shards) == list(range(count)),
            f"{what} has its {count} shards {stage}.0of{count} to {count - 1}of{count}",
            f"has shards {sorted(shards)}",
        )
        for index, queue in sorted(shards.items()):
            arguments = queue.get("arguments", {})
            report.check(
                arguments.get("x-queue-type") == "quorum" and arguments.get("x-single-active-consumer") is True,
                f"{what}.{index}of{count} is a quorum queue with a single active consumer",
                f"arguments {arguments}",
            )
    return layout


def check_shard_settings(environment: dict, layout: dict, report: Report, what: str, declares: bool) -> None:
    """A role that declares the topology (it reaches the broker) must be given each stage's
    shard count as definitions.json lays it out; any other that is given one, the same.
    Unset is the code's default, one shard."""
    for stage, variable in SHARDED_STAGES.items():
        expected = str(len(layout.get(stage, [])))
        if variable not in environment and not declares:
            continue
        value = str(environment.get(variable, DEFAULT_SHARDS)).strip()
        unset = "" if variable in environment else " (unset: the default)"
        report.check(
            value == expected,
            f"{what}: {variable} is {expected}, the shards of {stage} in definitions.json",
            f"is {value}{unset}: a worker refuses a broker laid out for {expected}, and a role that declares "
            f"the topology with {value} adds a layout of its own",
        )


def reaches_broker(environment: dict) -> bool:
    return "LIVELINE_AMQP_URL" in environment or "LIVELINE_AMQP_URL_FILE" in environment


# --- docker-compose.yml -----------------------------------------------------------------


def validate_compose(root: Path, cli: Command, keys: set[str], report: Report) -> None:
    compose_file = root / "docker-compose.yml"
    run = subprocess.run(["docker-compose", "-f", str(compose_file), "config", "-q"], capture_output=True, text=True)
    report.check(run.returncode == 0, "docker-compose config -q", (run.stderr or run.stdout).strip()[-800:])
    compose = yaml.safe_load(compose_file.read_text())
    services = compose.get("services") or {}
    layout = shard_layout(json.loads((root / "deploy/rabbitmq/definitions.json").read_text()))
    for name in COMPOSE_SERVICES:
        report.check(name in services, f"compose: service {name}", "missing")
    images = set()
    for name, service in services.items():
        build = service.get("build") or {}
        if not (isinstance(build, dict) and build.get("target") == "runtime"):
            continue
        images.add((service.get("image"), build.get("dockerfile"), build.get("context")))
        command = service.get("command")
        if isinstance(command, str):
            report.fail(f"compose: {name} command", "write it as a list, as the image's entrypoint is `liveline`")
            continue
        command = [str(c) for c in command or []]
        why = check_command(cli, command)
        report.check(why is None, f"compose: {name} runs `liveline {' '.join(command)}`", why or "")
        expected = COMPOSE_SERVICES.get(name)
        if expected:
            report.check(command[:1] == [expected], f"compose: {name} runs `liveline {expected}`", f"runs {command[:1]}")
        environment = service.get("environment") or {}
        if isinstance(environment, list):
            environment = dict(item.split("=", 1) for item in environment)
        targets = [str(v).split(":")[1] for v in service.get("volumes") or [] if isinstance(v, str) and ":" in str(v)]
        check_shard_settings(environment, layout, report, f"compose: {name}", declares=reaches_broker(environment))
        for variable, value in environment.items():
            check_variable(variable, keys, report, f"compose: {name}")
            if variable.startswith("LIVELINE_") and variable.endswith("_FILE"):
                report.check(
                    any(str(value).startswith(t.rstrip("/") + "/") for t in targets),
                    f"compose: {name}: {variable} is in a volume the service mounts",
                    f"{value} is under none of {targets}",
                )
        test = " ".join(map(str, (service.get("healthcheck") or {}).get("test") or []))
        if name in COMPOSE_HEALTHZ:
            report.check("/healthz" in test, f"compose: {name} healthcheck on /healthz", f"test is {test!r}")
            port = str(listening_port(COMPOSE_SERVICES[name], environment))
            report.check(port in test.split(), f"compose: {name} healthcheck on its port {port}", f"test is {test!r}")
    report.check(
        images == {("liveline:latest", "deploy/Dockerfile", ".")},
        "compose: every Liveline role runs the one image from deploy/Dockerfile",
        f"found {sorted(map(str, images))}",
    )
    check_image_build(root / "deploy" / "Dockerfile", report)


def check_image_build(dockerfile: Path, report: Report) -> None:
    """The image builds `liveline` with the flags of scripts/build-workers' release build, the
    binary the benchmarks measure (its build folder aside)."""
    build = re.search(r"RUN swift build (.*?) --product liveline", dockerfile.read_text())
    workers = (Path(__file__).resolve().parent / "build-workers").read_text()
    release = re.search(r"release\)\s*flags=\((.*?)\)", workers, re.S)
    if not build or not release:
        report.fail("image: deploy/Dockerfile builds liveline as scripts/build-workers release does", "a build line is missing")
        return
    image = build.group(1).split()
    benchmarked = release.group(1).split()
    if "--scratch-path" in benchmarked:
        index = benchmarked.index("--scratch-path")
        del benchmarked[index:index + 2]
    report.check(
        image == benchmarked,
        "image: deploy/Dockerfile builds liveline as scripts/build-workers release does",
        f"the image: {' '.join(image)}; the benchmarks: {' '.join(benchmarked)}",
    )


# --- Kubernetes -------------------------------------------------------------------------


def kustomize(root: Path, folder: Path) -> list[dict]:
    run = subprocess.run(["kubectl", "kustomize", str(folder)], capture_output=True, text=True, cwd=root)
    if run.returncode != 0:
        raise RuntimeError(run.stderr.strip())
    return [d for d in yaml.safe_load_all(run.stdout) if d]


def schema_errors(validator, document) -> list[str]:
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
    return [f"{'.'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}" for e in errors[:5]]


def validate_kubernetes(root: Path, cli: Command, keys: set[str], report: Report, versions=KUBERNETES_VERSIONS) -> None:
    schemas = {}
    for key, file in CUSTOM_RESOURCE_SCHEMAS.items():
        schema = json.loads((root / "deploy/schemas" / file).read_text())
        jsonschema.Draft202012Validator.check_schema(schema)
        schemas[key] = jsonschema.Draft202012Validator(schema)
    definitions = json.loads((root / "deploy/rabbitmq/definitions.json").read_text())
    layout = shard_layout(definitions, report)
    overlays = sorted(p for p in (root / "deploy/kubernetes/overlays").iterdir() if p.is_dir())
    report.check(
        {p.name for p in overlays} >= {"dev", "prod"}, "kubernetes: overlays dev and prod", f"found {[p.name for p in overlays]}"
    )
    for overlay in overlays:
        where = f"kubernetes/{overlay.name}"
        try:
            documents = kustomize(root, overlay)
        except RuntimeError as error:
            report.fail(f"{where}: kustomize build", str(error)[-800:])
            continue
        report.check(True, f"{where}: kustomize build ({len(documents)} resources)")
        for document in documents:
            kind, api = document.get("kind"), document.get("apiVersion")
            name = f"{where}: {kind} {document.get('metadata', {}).get('name')}"
            if (api, kind) in schemas:
                errors = schema_errors(schemas[(api, kind)], document)
                report.check(not errors, f"{name} matches deploy/schemas/{CUSTOM_RESOURCE_SCHEMAS[(api, kind)]}", "; ".join(errors))
                continue
            for version in versions:
                try:
                    kubernetes_validate.validate(document, version, strict=True)
                    report.check(True, f"{name} (kubernetes-validate --strict, {version})")
                except kubernetes_validate.ValidationError as error:
                    path = ".".join(map(str, error.absolute_path)) or "(root)"
                    report.fail(f"{name} (kubernetes-validate --strict, {version})", f"{path}: {error.message}")
                except kubernetes_validate.SchemaNotFoundError as error:
                    report.fail(name, f"{error.message}; add a schema to deploy/schemas if it is a custom resource")
        check_references(where, documents, definitions, layout, cli, keys, report)


def check_references(where, documents, definitions, layout, cli, keys, report) -> None:
    """What the schemas cannot know: how the resources refer to each other and to the code."""
    by_kind: dict[str, dict[str, dict]] = {}
    for d in documents:
        by_kind.setdefault(d["kind"], {})[d["metadata"]["name"]] = d
    deployments = by_kind.get("Deployment", {})
    configmaps = by_kind.get("ConfigMap", {})

    report.check(set(deployments) == set(COMPONENTS), f"{where}: Deployments {sorted(COMPONENTS)}", f"found {sorted(deployments)}")
    for configmap in configmaps.values():
        for variable in configmap.get("data", {}):
            check_variable(variable, keys, report, f"{where}: ConfigMap {configmap['metadata']['name']}")
        check_shard_settings(configmap.get("data", {}), layout, report, f"{where}: ConfigMap {configmap['metadata']['name']}", declares=False)

    for name, deployment in deployments.items():
        component = COMPONENTS.get(name)
        if component is None:
            continue
        pod = deployment["spec"]["template"]["spec"]
        labels = deployment["spec"]["template"]["metadata"].get("labels", {})
        what = f"{where}: Deployment {name}"
        report.check("replicas" not in deployment["spec"], f"{what} leaves replicas to its autoscaler", "spec.replicas is set")
        grace = pod.get("terminationGracePeriodSeconds", 30)
        report.check(grace >= component["grace"], f"{what} grace period covers the drain", f"{grace} s < {component['grace']} s")
        security = pod.get("securityContext", {})
        report.check(security.get("runAsNonRoot") is True, f"{what} runs as non-root", "pod securityContext.runAsNonRoot is not true")
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        for volume in volumes.values():
            sources = [volume["secret"]] if "secret" in volume else [s["secret"] for s in volume.get("projected", {}).get("sources", []) if "secret" in s]
            for source in sources:
                secret = source.get("secretName") or source.get("name")
                check_secret(report, what, secret, [i["key"] for i in source.get("items", [])])
        containers = pod.get("containers", [])
        report.check(len(containers) == 1, f"{what} has one container", f"{len(containers)}")
        for container in containers:
            cwhat = f"{what} container {container['name']}"
            argv = [str(a) for a in container.get("command", [])[1:] + container.get("args", [])] if container.get("command") else [str(a) for a in container.get("args", [])]
            why = check_command(cli, argv)
            report.check(why is None, f"{cwhat} runs `liveline {' '.join(argv)}`", why or "")
            report.check(argv[:1] == [component["role"]], f"{cwhat} runs `liveline {component['role']}`", f"runs {argv[:1]}")
            resources = container.get("resources", {})
            for bound in ("requests", "limits"):
                for resource in ("cpu", "memory"):
                    report.check(resource in resources.get(bound, {}), f"{cwhat} {bound}.{resource}", "missing")
            ports = {p.get("name"): p["containerPort"] for p in container.get("ports", [])}
            for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz"), ("startupProbe", "/healthz")):
                get = container.get(probe, {}).get("httpGet", {})
                report.check(get.get("path") == path, f"{cwhat} {probe} on {path}", f"path is {get.get('path')!r}")
                port = get.get("port")
                report.check(port in ports or port in ports.values(), f"{cwhat} {probe} port {port} is a container port", f"ports {ports}")
            csec = container.get("securityContext", {})
            report.check(csec.get("readOnlyRootFilesystem") is True, f"{cwhat} read-only root filesystem", "not set")
            report.check(csec.get("allowPrivilegeEscalation") is False, f"{cwhat} no privilege escalation", "not set")
            report.check("ALL" in csec.get("capabilities", {}).get("drop", []), f"{cwhat} drops all capabilities", "not set")
            for mount in container.get("volumeMounts", []):
                volume = volumes.get(mount["name"])
                report.check(volume is not None, f"{cwhat} mounts volume {mount['name']}", "no such volume")
                if volume and ("secret" in volume or "projected" in volume):
                    report.check(mount.get("readOnly") is True, f"{cwhat} mounts secrets {mount['name']} read-only", "readOnly is not true")
            for source in container.get("envFrom", []):
                ref = source.get("configMapRef", {}).get("name")
                if ref:
                    report.check(ref in configmaps, f"{cwhat} envFrom ConfigMap {ref}", "not in the render")
            for variable in container.get("env", []):
                check_variable(variable["name"], keys, report, cwhat)
                ref = variable.get("valueFrom", {}).get("secretKeyRef")
                if ref:
                    check_secret(report, cwhat, ref["name"], [ref["key"]])
            # A role reads every *_FILE setting it is given at start, so each must name a
            # file the container mounts.
            environment = {}
            for source in container.get("envFrom", []):
                environment.update(configmaps.get(source.get("configMapRef", {}).get("name"), {}).get("data", {}))
            environment.update({v["name"]: v["value"] for v in container.get("env", []) if "value" in v})
            broker = reaches_broker(environment) or any(v["name"].startswith("LIVELINE_AMQP_URL") for v in container.get("env", []))
            check_shard_settings(environment, layout, report, cwhat, declares=broker)
            expected = listening_port(component["role"], environment)
            for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
                port = container.get(probe, {}).get("httpGet", {}).get("port")
                report.check(ports.get(port, port) == expected, f"{cwhat} {probe} on the port it listens on, {expected}", f"port {port} is {ports.get(port, port)}")
            scrape = deployment["spec"]["template"]["metadata"].get("annotations", {}).get("prometheus.io/port")
            report.check(scrape in (None, str(expected)), f"{what} is scraped on {expected}", f"prometheus.io/port is {scrape}")
            for variable, path in sorted(environment.items()):
                if variable.startswith("LIVELINE_") and variable.endswith("_FILE"):
                    report.check(
                        mounts_file(container, volumes, configmaps, path),
                        f"{cwhat} {variable} names a file the container mounts",
                        f"{path} is in no volume it mounts",
                    )
        if name == "liveline-sender":
            mounted = {volumes[m["name"]].get("secret", {}).get("secretName") for c in containers for m in c.get("volumeMounts", []) if m["name"] in volumes}
            report.check("liveline-apns" in mounted, f"{what} mounts the .p8 keys from Secret liveline-apns", "not mounted")
        for kind in ("Service", "PodDisruptionBudget"):
            matching = [
                d["metadata"]["name"]
                for d in by_kind.get(kind, {}).values()
                if selects(d["spec"].get("selector", {}), labels)
            ]
            report.check(len(matching) == 1, f"{what} has one {kind}", f"selected by {matching}")
        targets = [
            d["metadata"]["name"]
            for kind in ("HorizontalPodAutoscaler", "ScaledObject")
            for d in by_kind.get(kind, {}).values()
            if d["spec"]["scaleTargetRef"]["name"] == name
        ]
        report.check(len(targets) == 1, f"{what} has one autoscaler", f"targeted by {targets}")
        autoscaler = by_kind.get(component["autoscaler"], {}).get(targets[0] if targets else "")
        report.check(autoscaler is not None, f"{what} is scaled by a {component['autoscaler']}", "it is not")
        if autoscaler and component["autoscaler"] == "ScaledObject":
            check_scaled_object(where, autoscaler, component, by_kind, definitions, layout, report)

    for service in by_kind.get("Service", {}).values():
        selector = service["spec"].get("selector", {})
        pods = [d for d in deployments.values() if selects({"matchLabels": selector}, d["spec"]["template"]["metadata"].get("labels", {}))]
        report.check(len(pods) == 1, f"{where}: Service {service['metadata']['name']} selects one Deployment", f"selects {len(pods)}")
        for pod in pods:
            names = {p.get("name") for c in pod["spec"]["template"]["spec"]["containers"] for p in c.get("ports", [])}
            for port in service["spec"].get("ports", []):
                target = port.get("targetPort")
                report.check(not isinstance(target, str) or target in names, f"{where}: Service {service['metadata']['name']} targetPort {target}", f"no container port named so ({names})")

    for cluster in by_kind.get("RabbitmqCluster", {}).values():
        what = f"{where}: RabbitmqCluster {cluster['metadata']['name']}"
        replicas = cluster["spec"].get("replicas", 1)
        report.check(replicas % 2 == 1, f"{what} has an odd number of nodes (quorum queues)", f"{replicas}")
        pod = cluster["spec"].get("override", {}).get("statefulSet", {}).get("spec", {}).get("template", {}).get("spec", {})
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        imported = []
        for volume in volumes.values():
            for source in volume.get("projected", {}).get("sources", []) or [volume]:
                if "configMap" in source:
                    ref = source["configMap"]["name"]
                    report.check(ref in configmaps, f"{what} mounts ConfigMap {ref}", "not in the render")
                    for key, text in configmaps.get(ref, {}).get("data", {}).items():
                        try:
                            imported.append(json.loads(text))
                            report.check(True, f"{what} definitions {key} parse")
                        except ValueError as error:
                            report.fail(f"{what} definitions {key}", str(error))
                if "secret" in source:
                    secret = source["secret"].get("secretName") or source["secret"].get("name")
                    check_secret(report, what, secret, [i["key"] for i in source["secret"].get("items", [])])
        for container in pod.get("containers", []):
            for mount in container.get("volumeMounts", []):
                volume = volumes.get(mount["name"], {})
                report.check(bool(volume), f"{what} mounts volume {mount['name']}", "no such volume")
                if "subPath" in mount and "configMap" in volume:
                    data = configmaps.get(volume["configMap"]["name"], {}).get("data", {})
                    report.check(mount["subPath"] in data, f"{what} mounts {mount['subPath']} of ConfigMap {volume['configMap']['name']}", f"keys are {sorted(data)}")
                if "subPath" in mount and "secret" in volume:
                    check_secret(report, what, volume["secret"].get("secretName"), [mount["subPath"]])
        report.check(definitions in imported, f"{what} imports deploy/rabbitmq/definitions.json", "no ConfigMap file it mounts equals it")
        config = cluster["spec"].get("rabbitmq", {}).get("additionalConfig", "")
        report.check("load_definitions" in config, f"{what} loads the definitions at boot", "no load_definitions")


def mounts_file(container: dict, volumes: dict, configmaps: dict, path: str) -> bool:
    for mount in container.get("volumeMounts", []):
        volume = volumes.get(mount["name"], {})
        root = mount["mountPath"].rstrip("/")
        if "subPath" in mount:
            if path == root:
                return True
            continue
        if not path.startswith(root + "/"):
            continue
        files = set()
        sources = volume.get("projected", {}).get("sources", []) or [volume]
        for source in sources:
            for kind in ("secret", "configMap"):
                if kind not in source:
                    continue
                items = source[kind].get("items")
                name = source[kind].get("secretName") or source[kind].get("name")
                if items:
                    files.update(i["path"] for i in items)
                elif kind == "secret":
                    files.update(EXTERNAL_SECRETS.get(name, set()))
                else:
                    files.update(configmaps.get(name, {}).get("data", {}))
        return path[len(root) + 1:] in files
    return False


def check_secret(report, what, secret, keys) -> None:
    if secret not in EXTERNAL_SECRETS:
        report.fail(f"{what} uses Secret {secret}", f"not one of the documented Secrets {sorted(EXTERNAL_SECRETS)}")
        return
    unknown = sorted(set(keys) - EXTERNAL_SECRETS[secret])
    report.check(not unknown, f"{what} uses Secret {secret} {sorted(keys)}", f"keys {unknown} are not documented")


def selects(selector: dict, labels: dict) -> bool:
    match = selector.get("matchLabels", selector if "matchLabels" not in selector and "matchExpressions" not in selector else {})
    return bool(match) and all(labels.get(k) == v for k, v in match.items())


def check_scaled_object(where, scaled, component, by_kind, definitions, layout, report) -> None:
    what = f"{where}: ScaledObject {scaled['metadata']['name']}"
    spec = scaled["spec"]
    stage = component["stage"]
    shards = layout.get(stage, [])
    low, high = spec.get("minReplicaCount", 0), spec.get("maxReplicaCount", 100)
    report.check(1 <= low <= high, f"{what} min {low} max {high} replicas", "needs 1 <= min <= max")
    report.check(
        high <= len(shards),
        f"{what} max {high} replicas is at most the {len(shards)} shards of {stage}",
        "a worker beyond the shard count holds no shard and only stands by, so KEDA would add it "
        "for a depth it cannot drain; add shards first (docs/SCALING.md)",
    )
    # The queues the broker can have: the topology's, and the workers' lease queues.
    names = [q["name"] for q in definitions["queues"]]
    candidates = names + [f"{name}.lease" for name in names if SHARD_QUEUE.match(name)]
    triggers = spec.get("triggers", [])
    report.check(len(triggers) == 1, f"{what} has one trigger", f"{len(triggers)}")
    for trigger in triggers:
        report.check(trigger.get("type") == "rabbitmq", f"{what} trigger is rabbitmq", f"{trigger.get('type')}")
        metadata = trigger.get("metadata", {})
        queue = metadata.get("queueName", "")
        regex = metadata.get("useRegex") == "true"
        protocol = metadata.get("protocol", "auto")
        if regex:
            report.check(protocol == "http", f"{what} reads its queue regex over http", f"protocol is {protocol}: KEDA sums queues by regex only through the management API")
            report.check(metadata.get("operation") == "sum", f"{what} sums the depths of its queues", f"operation is {metadata.get('operation')}")
            try:
                pattern = re.compile(queue)
                # The management API keeps the queues the regex matches anywhere in the name.
                matched = {name for name in candidates if pattern.search(name)}
            except re.error as error:
                report.fail(f"{what} queue regex {queue!r}", str(error))
                matched = set()
        else:
            matched = {queue} if queue in candidates else set()
        missing = [name for name in shards if name not in matched]
        extra = sorted(matched - set(shards))
        report.check(
            bool(shards) and not missing and not extra,
            f"{what} watches every shard of {stage} and nothing else ({len(shards)} queues)",
            f"queueName {queue!r}{' (regex)' if regex else ''}"
            + (f" misses {missing}" if missing else "")
            + (f" also matches {extra}" if extra else "")
            + ("" if matched else " matches no queue of deploy/rabbitmq/definitions.json"),
        )
        report.check(metadata.get("mode", "QueueLength") == "QueueLength", f"{what} scales on queue length", f"mode is {metadata.get('mode')}")
        auth = trigger.get("authenticationRef", {}).get("name")
        authentication = by_kind.get("TriggerAuthentication", {}).get(auth)
        report.check(authentication is not None, f"{what} authenticates with TriggerAuthentication {auth}", "not in the render")
        if authentication:
            for ref in authentication["spec"].get("secretTargetRef", []):
                check_secret(report, f"{where}: TriggerAuthentication {auth}", ref["name"], [ref["key"]])
            hosts = [r for r in authentication["spec"].get("secretTargetRef", []) if r["parameter"] == "host"]
            report.check(bool(hosts) or "host" in metadata, f"{what} has the broker's host", "no host")
            wanted = BROKER_URL_KEYS.get(protocol)
            for ref in hosts:
                report.check(
                    wanted is None or ref["key"] == wanted,
                    f"{what} reads its host for {protocol} from key {wanted} of Secret {ref['name']}",
                    f"TriggerAuthentication {auth} takes key {ref['key']}",
                )


# --- Grafana ----------------------------------------------------------------------------


DASHBOARD_PANELS = {
    "throughput": r"throughput",
    "end-to-end latency": r"end-to-end latency",
    "APNs errors": r"apns errors",
    "queue depths": r"queue depth",
    "dead letters": r"dead letters",
}


def validate_dashboard(root: Path, metrics: set[str], report: Report) -> None:
    path = root / "deploy/grafana/liveline.json"
    try:
        dashboard = json.loads(path.read_text())
    except ValueError as error:
        report.fail("grafana: deploy/grafana/liveline.json parses", str(error))
        return
    report.check(True, "grafana: deploy/grafana/liveline.json parses")
    panels = []
    for panel in dashboard.get("panels", []):
        panels.append(panel)
        panels.extend(panel.get("panels", []))
    titles = " | ".join(p.get("title", "").lower() for p in panels)
    for what, pattern in DASHBOARD_PANELS.items():
        report.check(re.search(pattern, titles) is not None, f"grafana: a panel for {what}", "no panel title matches")
    ids = [p.get("id") for p in panels]
    report.check(len(ids) == len(set(ids)), "grafana: panel ids are unique", f"{ids}")
    for panel in panels:
        for target in panel.get("targets", []):
            expression = target.get("expr", "")
            for name in set(re.findall(r"\bliveline_[a-z0-9_]+", expression)):
                base = re.sub(r"_(bucket|sum|count)$", "", name)
                if base in metrics or name in metrics:
                    report.check(True, f"grafana: {panel.get('title')}: {name} is recorded by the code")
                elif base in PENDING_METRICS:
                    report.warn(f"{base} is not recorded by the code yet", f"grafana: {panel.get('title')}")
                else:
                    report.fail(f"grafana: {panel.get('title')}: {name}", "no metric of that name in Sources/")


# --- Self-test --------------------------------------------------------------------------

# Each mutation breaks one file in a copy of the repository and names the check that must
# then fail. The text replaced must occur exactly once, so a mutation cannot silently miss.
MUTATIONS = [
    ("a misspelled field in a ScaledObject", "deploy/kubernetes/base/translator.yaml",
     "  maxReplicaCount: 8\n", "  maxReplicasCount: 8\n", "scaledobject.schema.json"),
    ("a misspelled rabbitmq trigger parameter", "deploy/kubernetes/base/sender.yaml",
     '        useRegex: "true"\n', '        usesRegex: "true"\n', "scaledobject.schema.json"),
    ("a misspelled field in a TriggerAuthentication", "deploy/kubernetes/base/keda-auth.yaml",
     "  secretTargetRef:", "  secretTargetRefs:", "triggerauthentication.schema.json"),
    ("a misspelled field in a RabbitmqCluster", "deploy/rabbitmq/rabbitmq-cluster.yaml",
     "    additionalPlugins:", "    additionalPlugin:", "rabbitmqcluster.schema.json"),
    ("a misspelled field in a Deployment", "deploy/kubernetes/base/sender.yaml",
     "  revisionHistoryLimit: 5", "  revisionHistoryLimt: 5", "kubernetes-validate --strict"),
    ("a misspelled field in a Deployment's container", "deploy/kubernetes/base/api.yaml",
     "          readinessProbe:", "          readynessProbe:", "kubernetes-validate --strict"),
    ("a wrongly typed field in a PodDisruptionBudget", "deploy/kubernetes/base/translator.yaml",
     "kind: PodDisruptionBudget\nmetadata:\n  name: liveline-translator\nspec:\n",
     "kind: PodDisruptionBudget\nmetadata:\n  name: liveline-translator\nspec:\n  unhealthyPodEvictionPolicy: [Always]\n",
     "kubernetes-validate --strict"),
    ("a secret file a Deployment does not mount", "deploy/kubernetes/base/sender.yaml",
     "value: /var/run/secrets/liveline-apns/key.p8", "value: /var/run/secrets/liveline/key.p8", "names a file the container mounts"),
    ("a secret file a compose service does not mount", "docker-compose.yml",
     "      LIVELINE_API_JWT_HS256_SECRET_FILE: /run/liveline-secrets/api-jwt-secret\n",
     "      LIVELINE_API_JWT_HS256_SECRET_FILE: /run/secrets/api-jwt-secret\n", "is in a volume the service mounts"),
    ("a KEDA trigger on queues the topology lacks", "deploy/kubernetes/base/translator.yaml",
     "queueName: '^liveline\\.translate\\.", "queueName: '^liveline\\.translator\\.", "watches every shard of liveline.translate"),
    ("a KEDA trigger regex that misses shards", "deploy/kubernetes/base/translator.yaml",
     "[0-9]+of8$'", "[0-6]of8$'", "watches every shard of liveline.translate"),
    ("a KEDA trigger regex that also matches the lease queues", "deploy/kubernetes/base/sender.yaml",
     "of8$'", "of8'", "watches every shard of liveline.send"),
    ("a KEDA trigger on one shard over AMQP", "deploy/kubernetes/base/sender.yaml",
     "        protocol: http\n        queueName: '^liveline\\.send\\.[0-9]+of8$'\n        useRegex: \"true\"\n",
     "        protocol: amqp\n        queueName: liveline.send.0of8\n", "watches every shard of liveline.send"),
    ("a KEDA trigger that takes the deepest shard, not the sum", "deploy/kubernetes/base/sender.yaml",
     "operation: sum", "operation: max", "sums the depths of its queues"),
    ("a KEDA trigger on the management API with the AMQP URL", "deploy/kubernetes/base/keda-auth.yaml",
     "key: management-url", "key: url", "reads its host for http from key management-url"),
    ("more replicas than shards", "deploy/kubernetes/overlays/prod/kustomization.yaml",
     "path: /spec/maxReplicaCount\n        value: 8\n", "path: /spec/maxReplicaCount\n        value: 16\n",
     "replicas is at most the 8 shards"),
    ("a shard count in the ConfigMap other than the broker's", "deploy/kubernetes/base/kustomization.yaml",
     "- LIVELINE_SEND_SHARDS=8", "- LIVELINE_SEND_SHARDS=4", "LIVELINE_SEND_SHARDS is 8"),
    ("an overlay that sets another shard count", "deploy/kubernetes/overlays/prod/kustomization.yaml",
     "      - LIVELINE_APP_MAIN_ENVIRONMENT=production\n",
     "      - LIVELINE_APP_MAIN_ENVIRONMENT=production\n      - LIVELINE_TRANSLATE_SHARDS=16\n", "LIVELINE_TRANSLATE_SHARDS is 8"),
    ("a stage laid out for two shard counts in definitions.json", "deploy/rabbitmq/definitions.json",
     '"name" : "liveline.send.7of8"', '"name" : "liveline.send.7of9"', "liveline.send is laid out for one shard count"),
    ("an option `liveline translator` does not take in a Deployment", "deploy/kubernetes/base/translator.yaml",
     'args: ["translator", "--log-level", "info"]', 'args: ["translator", "--loglevel", "info"]', "runs `liveline translator"),
    ("a misspelled setting in the ConfigMap", "deploy/kubernetes/base/kustomization.yaml",
     "- LIVELINE_APPS=main", "- LIVELINE_APSS=main", "LIVELINE_APSS"),
    ("an unknown subcommand in docker-compose.yml", "docker-compose.yml",
     'command: ["sender", "--log-level", "info"]', 'command: ["senders", "--log-level", "info"]', "compose: sender runs"),
    ("an option `liveline apns-sim` does not take in docker-compose.yml", "docker-compose.yml",
     "      - --certificate-out\n", "      - --certificate-file\n", "compose: apns-sim runs"),
    ("a shard count in docker-compose.yml other than the broker's", "docker-compose.yml",
     '  LIVELINE_TRANSLATE_SHARDS: "8"', '  LIVELINE_TRANSLATE_SHARDS: "4"', "compose: translator: LIVELINE_TRANSLATE_SHARDS is 8"),
    ("a compose role that declares the topology without the shard counts", "docker-compose.yml",
     "      <<: *shards\n      LIVELINE_AMQP_URL_FILE", "      LIVELINE_AMQP_URL_FILE", "compose: demo: LIVELINE_SEND_SHARDS is 8"),
    ("a misspelled app setting in docker-compose.yml", "docker-compose.yml",
     "LIVELINE_APP_DEMO_BUNDLE_ID:", "LIVELINE_APP_DEMO_BUNDLEID:", "LIVELINE_APP_DEMO_BUNDLEID"),
    ("a sender probed on the translator's ops port", "deploy/kubernetes/base/sender.yaml",
     "              containerPort: 9091", "              containerPort: 9090", "on the port it listens on, 9091"),
    ("a compose healthcheck on another role's port", "docker-compose.yml",
     'test: ["CMD", "liveline-probe", "9091", "/healthz"]', 'test: ["CMD", "liveline-probe", "9090", "/healthz"]',
     "compose: sender healthcheck on its port 9091"),
    ("a misspelled setting in docker-compose.yml", "docker-compose.yml",
     "LIVELINE_APNS_CA_FILE:", "LIVELINE_APNS_CAFILE:", "LIVELINE_APNS_CAFILE"),
    ("an image built otherwise than the benchmarked binary", "deploy/Dockerfile",
     " -Xcc -ffunction-sections --product liveline", " --product liveline", "image: deploy/Dockerfile builds liveline"),
    ("a compose file docker-compose rejects", "docker-compose.yml",
     "      translator:\n        condition: service_started\n",
     "      translator:\n        condition: service_begun\n", "docker-compose config -q"),
    ("a dashboard query on a metric the code does not record", "deploy/grafana/liveline.json",
     "liveline_sender_dead_letters_total", "liveline_sender_deadletters_total", "liveline_sender_deadletters_total"),
]


def self_test(root: Path, cli: Command, keys: set[str], metrics: set[str]) -> list[str]:
    problems = []
    for what, file, old, new, expected in MUTATIONS:
        with tempfile.TemporaryDirectory(prefix="liveline-self-test-") as scratch:
            copy_root = Path(scratch)
            shutil.copy2(root / "docker-compose.yml", copy_root / "docker-compose.yml")
            shutil.copytree(root / "deploy", copy_root / "deploy")
            target = copy_root / file
            text = target.read_text()
            if text.count(old) != 1:
                problems.append(f"{what}: the text to break occurs {text.count(old)} times in {file}, not once")
                continue
            target.write_text(text.replace(old, new))
            report = Report(quiet=True)
            try:
                if file in ("docker-compose.yml", "deploy/Dockerfile"):
                    validate_compose(copy_root, cli, keys, report)
                elif file.endswith(".json") and "grafana" in file:
                    validate_dashboard(copy_root, metrics, report)
                else:
                    validate_kubernetes(copy_root, cli, keys, report, versions=KUBERNETES_VERSIONS[-1:])
            except Exception as error:  # a crash is not the clean failure the test wants
                problems.append(f"{what}: the validator crashed: {error!r}")
                continue
            caught = [f for f in report.failures if expected in f]
            if caught:
                print(f"  ok    caught {what}: {' '.join(caught[0].split())[:150]}")
            else:
                problems.append(f"{what} ({file}) was not caught as expected ({expected!r}); failures: {report.failures[:3]}")
                print(f"  FAIL  did not catch {what}")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--self-test", action="store_true", help="only the self-test")
    parser.add_argument("--no-self-test", action="store_true", help="skip the self-test")
    parser.add_argument("--cli-from-source", action="store_true", help="read the command line from Sources/liveline even when a binary exists")
    parser.add_argument("--verbose", action="store_true", help="print every check, not only failures")
    options = parser.parse_args()
    root = options.root
    report = Report(verbose=options.verbose)
    report.section("the liveline command line")
    cli = load_cli(root, report, from_source=options.cli_from_source)
    keys = known_settings(root)
    metrics = known_metrics(root)
    if not options.self_test:
        sections = [
            ("docker-compose.yml: docker-compose config, commands, settings, healthchecks", lambda: validate_compose(root, cli, keys, report)),
            ("Kubernetes overlays: kustomize, kubernetes-validate --strict, deploy/schemas, references", lambda: validate_kubernetes(root, cli, keys, report)),
            ("Grafana dashboard: parses, panels, metric names", lambda: validate_dashboard(root, metrics, report)),
        ]
        for title, run in sections:
            report.section(title)
            before = (report.passed, len(report.failures))
            run()
            print(f"  {report.passed - before[0]} checks hold, {len(report.failures) - before[1]} failed")
    problems = []
    if not options.no_self_test:
        report.section("self-test: each broken copy must fail")
        problems = self_test(root, cli, keys, metrics)
    print()
    for warning, places in report.warnings.items():
        where = f" ({'; '.join(places)})" if places else ""
        print(f"validate-deploy: warning: {warning}{where}")
    for failure in report.failures:
        print(f"validate-deploy: FAILED: {failure}")
    for problem in problems:
        print(f"validate-deploy: SELF-TEST FAILED: {problem}")
    total = report.passed + len(report.failures)
    mutations = 0 if options.no_self_test else len(MUTATIONS)
    print(
        f"validate-deploy: {report.passed} of {total} checks hold; the self-test caught "
        f"{mutations - len(problems)} of {mutations} broken copies; {len(report.warnings)} warnings"
    )
    return 1 if report.failures or problems else 0


if __name__ == "__main__":
    sys.exit(main())
