#!/usr/bin/env python3
"""Package.swift declares exactly what each target imports: every dependency a target declares (another target of
this package or a product of another package) is imported by at least one of its files, and every module a file
imports that this package builds is declared (`swift build --explicit-target-dependency-import-check error` checks
the same for targets; this also covers products and test targets). Reads `swift package dump-package` on stdin."""
import json, os, re, sys

package = json.load(sys.stdin)
root = os.getcwd()
# What a module is called when it is not its product's name.
module_of_product = {}
# Attributes (`@testable`, `@_exported`) on the import's own line only: a class that spans lines read a block of
# `@testable import` lines as one, and only its last module was seen.
system = {"Foundation", "FoundationEssentials", "FoundationNetworking", "Dispatch", "Glibc", "Musl", "Darwin", "XCTest",
          "Testing", "Synchronization", "os", "_Concurrency", "RegexBuilder", "Observation", "CoreFoundation"}
imports = re.compile(r"^[ \t]*(?:@[\w(), \t]+[ \t]+)*(?:(?:public|package|internal|fileprivate|private)\s+)?import\s+(?:(?:struct|class|enum|protocol|typealias|func|var|let)\s+)?([A-Za-z_][\w]*)", re.M)

targets = {t["name"] for t in package["targets"]}
# An executable a target depends on is built for it to run (a test's child process), never imported.
executables = {t["name"] for t in package["targets"] if t["type"] == "executable"}
problems = []
for target in package["targets"]:
    if target["type"] in ("plugin", "binary", "system"):
        continue
    path = target.get("path") or os.path.join("Tests" if target["type"] == "test" else "Sources", target["name"])
    imported = set()
    for folder, _, files in os.walk(os.path.join(root, path)):
        for name in files:
            if name.endswith(".swift"):
                with open(os.path.join(folder, name), encoding="utf-8") as source:
                    imported |= set(imports.findall(source.read()))
    declared = set()
    for dependency in target["dependencies"]:
        for kind in ("byName", "target", "product"):
            if kind in dependency:
                name = dependency[kind][0]
                declared.add(module_of_product.get(name, name))
    for name in sorted(declared - imported - executables):
        problems.append(f"{target['name']}: declares {name} in Package.swift but no file imports it")
    for name in sorted((imported & targets) - declared - {target["name"]}):
        problems.append(f"{target['name']}: imports {name}, which its Package.swift entry does not declare")

for problem in problems:
    print(f"check-imports: {problem}")
sys.exit(1 if problems else 0)
