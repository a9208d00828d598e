"""Load a function's handler from template.yaml and invoke it in-process, as Lambda would."""

from __future__ import annotations

import importlib.util
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lakehook.local.template import FunctionSpec

Handler = Callable[[dict[str, Any], Any], Any]


@dataclass
class LocalContext:
    """The parts of the Lambda context object that handlers and Powertools read."""

    function_name: str
    timeout_seconds: int
    memory_limit_in_mb: int = 512
    function_version: str = "$LATEST"
    aws_request_id: str = ""
    log_group_name: str = ""
    log_stream_name: str = "local"

    def __post_init__(self) -> None:
        self.aws_request_id = self.aws_request_id or str(uuid.uuid4())
        self.invoked_function_arn = f"arn:aws:lambda:us-east-1:123456789012:function:{self.function_name}"
        self.log_group_name = f"/aws/lambda/{self.function_name}"
        self._deadline = time.monotonic() + self.timeout_seconds

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


_import_lock = threading.Lock()


class LocalFunction:
    """One function of the template, imported once from its CodeUri (like a warm Lambda)."""

    def __init__(self, spec: FunctionSpec) -> None:
        self.spec = spec
        self._handler: Handler | None = None

    @property
    def handler(self) -> Handler:
        if self._handler is None:
            with _import_lock:
                if self._handler is None:
                    self._handler = self._load()
        return self._handler

    def _load(self) -> Handler:
        module_name, _, attr = self.spec.handler.rpartition(".")
        path = self.spec.code_uri / (module_name.replace(".", "/") + ".py")
        if not path.exists():
            raise FileNotFoundError(f"{self.spec.name}: handler file {path} does not exist")
        unique = f"lakehook_local_fn_{self.spec.name}"
        loader_spec = importlib.util.spec_from_file_location(unique, path)
        if loader_spec is None or loader_spec.loader is None:
            raise ImportError(f"cannot import {path}")
        module = importlib.util.module_from_spec(loader_spec)
        code_dir = str(self.spec.code_uri)
        if code_dir not in sys.path:
            sys.path.append(code_dir)
        sys.modules[unique] = module
        loader_spec.loader.exec_module(module)
        handler: Handler = getattr(module, attr)
        return handler

    def invoke(self, event: dict[str, Any]) -> Any:
        return self.handler(event, LocalContext(self.spec.name, self.spec.timeout))
