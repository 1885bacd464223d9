#!/usr/bin/env python3
"""Generates python/aclprof/_bindings.py from the committed C headers in include/acl/.

The generated module holds, for every function the headers declare, its ctypes ``restype``
and ``argtypes``; every integer macro and enum value; and the public structs. It is
annotated for ``mypy --strict``: ``Library``, a Protocol declaring every function with the
Python types ctypes converts to and from, is the static type of the loaded library
(``aclprof._lib.load()`` returns it, through ``typed``, the one cast). The C headers are themselves generated from the Rust sources (and
checked for drift there), so the chain Rust -> header -> Python has no hand-written step
that could disagree.

Usage:
    python3 python/tools/gen_bindings.py           # rewrite python/aclprof/_bindings.py
    python3 python/tools/gen_bindings.py --check   # exit 1 if the committed file differs

The parser understands the subset of C that cbindgen writes (one declaration per
statement, ``typedef enum {...} Name;``, ``typedef struct Name {...} Name;``, integer
``#define``s). Anything else it meets is an error, never silently skipped: a header change
that needs a new type mapping fails here first.
"""

from __future__ import annotations

import argparse
import keyword
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
# In dependency order: each header only uses types declared by those before it.
HEADERS = ("acl_base.h", "acl_prof.h", "acl_prof_ext.h", "acl_rt.h", "acl_mdl.h", "acl.h")
INCLUDE_DIR = REPO / "include" / "acl"
OUTPUT = REPO / "python" / "aclprof" / "_bindings.py"

# C scalar types -> ctypes names.
SCALARS = {
    "void": "None",
    "char": "c_char",
    "int": "c_int",
    "int8_t": "c_int8",
    "int16_t": "c_int16",
    "int32_t": "c_int32",
    "int64_t": "c_int64",
    "uint8_t": "c_uint8",
    "uint16_t": "c_uint16",
    "uint32_t": "c_uint32",
    "uint64_t": "c_uint64",
    "size_t": "c_size_t",
    "float": "c_float",
    "double": "c_double",
}

VISIBILITY = r"(?:MSVP_PROF_API|ACL_FUNC_VISIBILITY)"


class HeaderError(Exception):
    pass


class Header:
    """What one header declares, in declaration order."""

    def __init__(self, name: str):
        self.name = name
        self.constants: list[tuple[str, int]] = []
        self.enums: list[str] = []
        self.opaque: list[str] = []
        self.aliases: dict[str, str] = {}  # typedef name -> ctypes expression
        self.structs: list[tuple[str, list[tuple[str, str]]]] = []
        self.functions: list[tuple[str, str, list[str]]] = []  # name, restype, argtypes
        self.arg_names: dict[str, list[str]] = {}  # function name -> parameter names


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def parse_int(token: str) -> int:
    m = re.fullmatch(r"(-?)(0x[0-9a-fA-F]+|\d+)(?:u|ull|ll|ul|l)?", token, flags=re.I)
    if not m:
        raise HeaderError(f"not an integer constant: {token!r}")
    value = int(m.group(2), 0)
    return -value if m.group(1) else value


class Parser:
    def __init__(self) -> None:
        self.types: dict[str, str] = dict(SCALARS)  # known non-pointer types -> ctypes
        self.opaque: set[str] = set()
        self.structs: set[str] = set()

    def ctype(self, decl: str, what: str) -> str:
        """The ctypes expression for a C type such as ``const uint32_t *``."""
        stars = decl.count("*")
        base = " ".join(w for w in decl.replace("*", " ").split() if w not in ("const", "struct"))
        const = "const" in decl.split()
        if stars == 0:
            if base in self.types:
                return self.types[base]
            raise HeaderError(f"{what}: unknown type {decl!r}")
        if stars == 2 and (base in ("void", "char") or base in self.opaque):
            # An out-parameter receiving a handle or an address (char **: a string the
            # library allocated, read with ctypes.string_at and handed back to be freed).
            return "POINTER(c_void_p)"
        if stars > 1:
            raise HeaderError(f"{what}: pointer to pointer {decl!r} is not mapped")
        if base == "char":
            # An input string converts from bytes; an output buffer is a mutable char array.
            return "c_char_p" if const else "POINTER(c_char)"
        if base == "void" or base in self.opaque:
            return "c_void_p"
        if base in self.structs:
            return f"POINTER({base})"
        if self.types.get(base) == "c_void_p":
            return "POINTER(c_void_p)"  # e.g. aclrtContext *: an out-parameter receiving a handle
        if base in self.types and self.types[base] not in ("None", "c_void_p"):
            return f"POINTER({self.types[base]})"
        raise HeaderError(f"{what}: unknown pointer type {decl!r}")

    def parse(self, name: str, text: str) -> Header:
        h = Header(name)
        body = strip_comments(text)
        # Integer macros; everything else the preprocessor sees is structure, not API.
        for line in body.splitlines():
            line = line.strip()
            if not line.startswith("#"):
                continue
            m = re.fullmatch(r"#\s*define\s+(\w+)\s+(\S+)", line)
            if m and re.fullmatch(r"-?(0x[0-9a-fA-F]+|\d+)\w*", m.group(2)):
                h.constants.append((m.group(1), parse_int(m.group(2))))
        code = "\n".join(
            line for line in body.splitlines() if not line.lstrip().startswith("#")
        )
        code = re.sub(r'extern\s+"C"\s*\{', " ", code)
        statements = self._statements(code)
        for stmt in statements:
            self._statement(h, stmt)
        return h

    @staticmethod
    def _statements(code: str) -> list[str]:
        """Top-level statements ending in ';' (braces kept inside their statement)."""
        out, depth, cur = [], 0, []
        for ch in code:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth < 0:  # the closing brace of extern "C"
                    depth = 0
                    continue
            cur.append(ch)
            if ch == ";" and depth == 0:
                out.append(" ".join("".join(cur).split()))
                cur = []
        rest = "".join(cur).strip()
        if rest:
            raise HeaderError(f"trailing text without ';': {rest[:80]!r}")
        return out

    def _statement(self, h: Header, stmt: str) -> None:
        m = re.fullmatch(r"typedef enum \{(.*)\} (\w+);", stmt)
        if m:
            value = -1
            for item in filter(None, (i.strip() for i in m.group(1).split(","))):
                em = re.fullmatch(r"(\w+)(?: = (\S+))?", item)
                if not em:
                    raise HeaderError(f"enum {m.group(2)}: cannot read {item!r}")
                value = parse_int(em.group(2)) if em.group(2) else value + 1
                h.constants.append((em.group(1), value))
            h.enums.append(m.group(2))
            self.types[m.group(2)] = "c_int"  # a C enum is passed as an int
            return
        m = re.fullmatch(r"typedef struct (\w+) \{(.*)\} (\w+);", stmt)
        if m:
            if m.group(1) != m.group(3):
                raise HeaderError(f"struct tag {m.group(1)} differs from typedef {m.group(3)}")
            fields = []
            for f in filter(None, (x.strip() for x in m.group(2).split(";"))):
                fm = re.fullmatch(r"(.+?)\s*(\w+)", f)
                if not fm:
                    raise HeaderError(f"struct {m.group(1)}: cannot read field {f!r}")
                fields.append((fm.group(2), self.ctype(fm.group(1), f"{m.group(1)}.{fm.group(2)}")))
            h.structs.append((m.group(1), fields))
            self.structs.add(m.group(1))
            return
        m = re.fullmatch(r"typedef struct (\w+) (\w+);", stmt)
        if m:
            h.opaque.append(m.group(2))
            self.opaque.add(m.group(2))
            return
        m = re.fullmatch(r"typedef .+? \(\*(\w+)\)\(.*\);", stmt)
        if m:
            # A callback: passed as its address (ctypes.cast of a CFUNCTYPE object).
            h.aliases[m.group(1)] = "c_void_p"
            self.types[m.group(1)] = "c_void_p"
            return
        m = re.fullmatch(r"typedef (.+?)\s*(\w+);", stmt)
        if m:
            ct = self.ctype(m.group(1), m.group(2))
            h.aliases[m.group(2)] = ct
            self.types[m.group(2)] = ct
            return
        m = re.fullmatch(VISIBILITY + r" (.+?)\s*(\w+)\s*\((.*)\);", stmt)
        if m:
            fname = m.group(2)
            restype = self.ctype(m.group(1), f"{fname} return")
            params = [p.strip() for p in m.group(3).split(",")]
            argtypes = []
            names = []
            if params != ["void"]:
                for p in params:
                    pm = re.fullmatch(r"(.+?)\s*(\w+)", p)
                    if not pm:
                        raise HeaderError(f"{fname}: cannot read parameter {p!r}")
                    argtypes.append(self.ctype(pm.group(1), f"{fname}({pm.group(2)})"))
                    names.append(pm.group(2))
            h.functions.append((fname, restype, argtypes))
            h.arg_names[fname] = names
            return
        raise HeaderError(f"unrecognised declaration: {stmt[:100]!r}")


def _used_ctypes(headers: list[Header]) -> list[str]:
    """The ctypes names the generated module refers to, sorted as isort would."""
    types = [t for h in headers for _, r, args in h.functions for t in (r, *args)]
    types += [t for h in headers for _, fields in h.structs for _, t in fields]
    names = set(re.findall(r"\b(?:POINTER|c_\w+)\b", " ".join(types)))
    if any(h.structs for h in headers):
        names.add("Structure")
    return sorted(names, key=lambda n: (not n[0].isupper(), n))


# ctypes' integer types: a Python int crosses in both directions.
_INT_CTYPES = {
    "c_int", "c_int8", "c_int16", "c_int32", "c_int64",
    "c_uint8", "c_uint16", "c_uint32", "c_uint64", "c_size_t",
}


def pytype(ct: str, what: str, result: bool) -> str:
    """The Python type, for a type checker, of a value of ctypes type ``ct`` as ctypes
    converts it: what a call returns (``result``) or what an argument accepts."""
    if ct in _INT_CTYPES:
        return "int"
    if result:
        if ct == "None":
            return "None"
        if ct == "c_void_p":
            return "Optional[int]"  # NULL is None
        if ct == "c_char_p":
            return "Optional[bytes]"
    else:
        if ct == "c_void_p":
            return "VoidP"
        if ct == "c_char_p":
            return "CharP"
        m = re.fullmatch(r"POINTER\((\w+)\)", ct)
        if m:
            return f"Ptr[{m.group(1)}]"
    raise HeaderError(f"{what}: no Python type for ctypes {ct}")


def _param(name: str) -> str:
    return name + "_" if keyword.iskeyword(name) else name


def render(include_dir: Path = INCLUDE_DIR) -> str:
    """The text of _bindings.py for the headers in ``include_dir``."""
    parser = Parser()
    headers = [parser.parse(n, (include_dir / n).read_text()) for n in HEADERS]
    out = [
        '"""ctypes declarations for every function, macro and enum value in include/acl/*.h.',
        "",
        "Generated by python/tools/gen_bindings.py from the committed headers -- do not edit.",
        "Regenerate with: python3 python/tools/gen_bindings.py",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "import ctypes",
        "from ctypes import (",
        *[f"    {name}," for name in _used_ctypes(headers)],
        ")",
        "from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Protocol, Tuple, cast",
        "",
        "if TYPE_CHECKING:",
        "    from pathlib import Path",
        "    from typing import Type, TypeVar, Union",
        "",
        "    _T = TypeVar(\"_T\", bound=ctypes._CData)",
        "    _Fn = TypeVar(\"_Fn\", bound=Callable[..., Any])",
        "    #: A ctypes type, as restype and argtypes take them.",
        "    CType = Type[ctypes._CDataType]",
        "    #: What a ``void *`` argument accepts: an address, None (NULL), bytes, a ctypes object or",
        "    #: a byref().",
        "    VoidP = Union[int, bytes, None, ctypes._CData, ctypes._CArgObject]",
        "    #: What a ``const char *`` argument accepts: bytes, None (NULL) or a ctypes string.",
        "    CharP = Union[bytes, None, ctypes.c_char_p, ctypes.Array[ctypes.c_char]]",
        "    #: What a ``T *`` argument accepts: a ``T`` (passed by reference), a pointer to or an array",
        "    #: of ``T``, a byref(), or None (NULL).",
        "    Ptr = Union[_T, ctypes._Pointer[_T], ctypes.Array[_T], ctypes._CArgObject, None]",
        "",
        "# fmt: off",
    ]
    for h in headers:
        out += ["", f"# ---- {h.name} " + "-" * (80 - 8 - len(h.name)), ""]
        for name, value in h.constants:
            out.append(f"{name} = {value}")
        for name, fields in h.structs:
            out += ["", "", f"class {name}(Structure):", "    _fields_ = ["]
            out += [f'        ("{f}", {t}),' for f, t in fields]
            out += ["    ]", ""]
    exported = [n for h in headers for n, _ in h.constants] + [n for h in headers for n, _ in h.structs]
    out += ["", "", "# The constants and structs (``from aclprof._bindings import *``).", "__all__ = ["]
    out += [f'    "{n}",' for n in exported]
    out += [
        "]",
        "",
        "# name -> (restype, argtypes), in header order.",
        "FUNCTIONS: Dict[str, Tuple[Optional[CType], List[CType]]] = {",
    ]
    for h in headers:
        out.append(f"    # {h.name}")
        for fname, restype, argtypes in h.functions:
            out.append(f'    "{fname}": ({restype}, [{", ".join(argtypes)}]),')
    out += ["}", "", "# name -> parameter names, as the headers spell them.",
            "ARG_NAMES: Dict[str, List[str]] = {"]
    for h in headers:
        for fname, _, _ in h.functions:
            out.append(f'    "{fname}": {h.arg_names[fname]!r},')
    out += [
        "}",
        "",
        "",
        "class Library(Protocol):",
        '    """The loaded library as :func:`bind` leaves it, for a type checker: every function of',
        "    the headers, taking and returning the Python values ctypes converts (an integer",
        "    outside its C type's range raises OverflowError). Get one with :func:`typed`.\"\"\"",
        "",
        "    #: The file it was loaded from (set by ``aclprof._lib.load()``).",
        "    path: Path",
    ]
    for h in headers:
        out += ["", f"    # {h.name}"]
        for fname, restype, argtypes in h.functions:
            params = [
                f"{_param(n)}: {pytype(t, f'{fname}({n})', result=False)}"
                for n, t in zip(h.arg_names[fname], argtypes)
            ]
            ret = pytype(restype, f"{fname} return", result=True)
            out.append(f"    def {fname}({', '.join(['self', *params, '/'])}) -> {ret}: ...")
    out += [
        "# fmt: on",
        "",
        "",
        "def _int_range(t: Optional[CType]) -> Optional[Tuple[int, int]]:",
        '    """(lowest, highest) value of an integer ctypes type, or None."""',
        "    if not (isinstance(t, type) and issubclass(t, ctypes._SimpleCData)):",
        "        return None",
        "    if getattr(t, \"_type_\", None) not in tuple(\"bBhHiIlLqQ\"):  # the struct module's integer codes",
        "        return None",
        "    bits = 8 * ctypes.sizeof(t)",
        "    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if t(-1).value < 0 else (0, (1 << bits) - 1)",
        "",
        "",
        "def _checked(name: str, fn: Callable[..., Any], argtypes: List[CType]) -> Callable[..., Any]:",
        '    """``fn``, refusing integers its C parameters cannot hold (ctypes would wrap them',
        '    silently: 2**64 + 1000 becomes 1000, -5000 a huge unsigned value)."""',
        "    checks = [(i, ARG_NAMES[name][i], r) for i, t in enumerate(argtypes) for r in [_int_range(t)] if r]",
        "    if not checks:",
        "        return fn",
        "",
        "    def call(*args: Any) -> Any:",
        "        for i, arg, (lo, hi) in checks:",
        "            if i < len(args) and isinstance(args[i], int) and not lo <= args[i] <= hi:",
        "                raise OverflowError(f\"{name}: {arg}={args[i]} is out of range ({lo}..{hi})\")",
        "        return fn(*args)",
        "",
        "    call.__name__ = name",
        "    setattr(call, \"__wrapped__\", fn)  # as functools.wraps does (not a declared attribute)",
        "    return call",
        "",
        "",
        "def bind(lib: ctypes.CDLL) -> ctypes.CDLL:",
        '    """Sets restype and argtypes of every function on the loaded library ``lib``, and',
        '    wraps those taking integers in a range check naming the parameter."""',
        "    for name, (restype, argtypes) in FUNCTIONS.items():",
        "        fn = getattr(lib, name)",
        "        fn.restype = restype",
        "        fn.argtypes = argtypes",
        "        setattr(lib, name, _checked(name, fn, argtypes))",
        "    setattr(lib, \"_aclprof_bound\", True)",
        "    return lib",
        "",
        "",
        "def typed(lib: ctypes.CDLL) -> Library:",
        '    """``lib``, which :func:`bind` has bound (``aclprof._lib.load()`` returns it so), as',
        '    the :class:`Library` it is: only its static type changes."""',
        "    if not getattr(lib, \"_aclprof_bound\", False):",
        "        raise TypeError(f\"{lib!r} is not bound: pass it to bind() first\")",
        "    return cast(Library, lib)",
        "",
        "",
        "def unchecked(fn: _Fn) -> _Fn:",
        '    """``fn``, a function of a bound :class:`Library`, without the range checks of',
        "    :func:`bind`: the ctypes function itself, for a hot path whose integers always fit",
        '    (its static type is unchanged)."""',
        "    return cast(\"_Fn\", getattr(fn, \"__wrapped__\", fn))",
        "",
        "",
        "def address(fn: Callable[..., Any]) -> Optional[int]:",
        '    """The C address of ``fn``, a function of a bound :class:`Library`, for native code',
        '    that calls it directly."""',
        "    raw: Any = getattr(fn, \"__wrapped__\", fn)  # the ctypes function",
        "    return ctypes.cast(raw, ctypes.c_void_p).value",
        "",
    ]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="fail if the committed file differs")
    args = ap.parse_args(argv)
    text = render()
    if args.check:
        if not OUTPUT.exists() or OUTPUT.read_text() != text:
            print(f"{OUTPUT} is out of date: run python3 {Path(__file__).relative_to(REPO)}",
                  file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text)
    print(f"wrote {OUTPUT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
