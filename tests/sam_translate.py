"""Print template.yaml as CloudFormation sees it after the SAM transform (JSON on stdout).

Run with the SAM CLI's own Python (``.venv-sam/bin/python tests/sam_translate.py template.yaml [Name=Value ...]``):
the SAM translator lives there, not in ``.venv``. Parameters not given take their defaults, as in a deploy. Local
code URIs become an S3 URI, as ``sam package`` leaves them; nothing else is changed, and no AWS call is made (the
template names no managed policy by its short name).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from samcli.yamlhelper import yaml_parse
from samtranslator.translator.transform import transform


class NoManagedPolicyLookup:
    """The translator asks for the account's managed policies only to resolve short names; there are none."""

    def load(self) -> dict[str, str]:
        return {}


def main(path: str, *parameters: str) -> None:
    with open(path) as file:
        template: dict[str, Any] = yaml_parse(file.read())
    for resource in template.get("Resources", {}).values():
        properties = resource.get("Properties") or {}
        for key in ("CodeUri", "ContentUri"):
            if isinstance(properties.get(key), str):
                properties[key] = "s3://packaged/code.zip"
    values = dict(parameter.split("=", 1) for parameter in parameters)
    json.dump(transform(template, values, NoManagedPolicyLookup()), sys.stdout)


if __name__ == "__main__":
    main(*sys.argv[1:])
