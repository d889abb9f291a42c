# The extension module (python/src/lib.rs): plain data in and out; the
# typed API is lt/__init__.py.
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

__version__: str

def check(
    source: str,
    declarations: Optional[Tuple[str, str]] = ...,
    profile_path: Optional[str] = ...,
    profile_table: Optional[Mapping[str, Any]] = ...,
) -> Dict[str, Any]: ...
def run(
    source: str,
    declarations: Optional[Tuple[str, str]] = ...,
    tools: Optional[Dict[str, Callable[[Any], Any]]] = ...,
    batch: Optional[Callable[[List[Tuple[str, Any]]], List[Tuple[bool, Any]]]] = ...,
    executors: Optional[str] = ...,
    profile_path: Optional[str] = ...,
    profile_table: Optional[Mapping[str, Any]] = ...,
    limits: Optional[Mapping[str, int]] = ...,
    log: Optional[str] = ...,
    force: bool = ...,
) -> Dict[str, Any]: ...
def replay(log: str) -> Dict[str, Any]: ...
def prompt(declarations: str) -> Dict[str, Any]: ...
def main(argv: List[str]) -> int: ...
