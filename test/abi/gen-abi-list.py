#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Generate abi_list.h: every public struct, member and integer constant of the
reference (Debian libfabric 1.17) headers, as X-macro lines.

Usage: gen-abi-list.py [--incdir DIR] [--cc CC] [-o abi_list.h]
       gen-abi-list.py --probe OURDIR [-o partial_list.h]
         (development aid: print list entries that do not compile against the
          headers present in OURDIR/rdma, write the rest as a partial list for
          abi_ours.c/abi_debian.c built with -DABI_LIST_FILE='"partial_list.h"')

Only declarations whose text comes from <incdir>/rdma/ are listed. The output
is committed; regenerate only when the reference headers change.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

# Public headers of the reference package (fi_ext_psm2.h is provider-specific
# and not part of our header set).
HEADERS = [
    "rdma/fabric.h", "rdma/fi_domain.h", "rdma/fi_endpoint.h", "rdma/fi_eq.h",
    "rdma/fi_cm.h", "rdma/fi_errno.h", "rdma/fi_tagged.h", "rdma/fi_rma.h",
    "rdma/fi_atomic.h", "rdma/fi_trigger.h", "rdma/fi_collective.h",
    "rdma/fi_ext.h", "rdma/providers/fi_prov.h", "rdma/providers/fi_log.h",
]

TOKEN_RE = re.compile(r"""
    (?P<ws>\s+)
  | (?P<str>"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*')
  | (?P<id>[A-Za-z_]\w*)
  | (?P<num>\.?\d(?:[eEpP][+-]|[\w.])*)
  | (?P<punct>\.\.\.|->|<<|>>|[{}()\[\];,:*=<>&|^~!?+\-/%.#])
""", re.X)


def fail(msg):
    sys.stderr.write("gen-abi-list: %s\n" % msg)
    sys.exit(1)


def preprocess(cc, incdir, extra):
    """Return (text from rdma headers, list of (name, body) object macros)."""
    src = "".join('#include <%s>\n' % h for h in HEADERS)
    cmd = [cc, "-E", "-dD", "-I", incdir] + extra + ["-x", "c", "-"]
    out = subprocess.run(cmd, input=src, capture_output=True, text=True)
    if out.returncode != 0:
        fail("preprocessing failed:\n" + out.stderr)
    prefix = os.path.join(os.path.abspath(incdir), "rdma") + "/"
    code, macros, cur = [], {}, None
    for line in out.stdout.splitlines():
        m = re.match(r'#\s*\d+\s+"([^"]*)"', line)
        if m:
            cur = m.group(1)
            continue
        if not (cur and os.path.abspath(cur).startswith(prefix)):
            continue
        if line.startswith("#define "):
            m = re.match(r"#define (\w+)(\(?)(.*)$", line)
            if m and not m.group(2):
                macros[m.group(1)] = m.group(3).strip()
            elif m:
                macros.pop(m.group(1), None)
        elif line.startswith("#undef "):
            macros.pop(line.split()[1], None)
        elif not line.startswith("#"):
            code.append(line)
    return "\n".join(code), [(k, v) for k, v in macros.items() if v]


def tokenize(text):
    toks, pos = [], 0
    while pos < len(text):
        m = TOKEN_RE.match(text, pos)
        if not m:
            fail("cannot tokenize near: %r" % text[pos:pos + 40])
        pos = m.end()
        if m.lastgroup != "ws":
            toks.append(m.group())
    # drop __attribute__((...)) and similar extensions
    out, i = [], 0
    while i < len(toks):
        if toks[i] in ("__attribute__", "__attribute", "__asm__", "__asm") and \
                i + 1 < len(toks) and toks[i + 1] == "(":
            i = match_close(toks, i + 1) + 1
            continue
        if toks[i] in ("__extension__", "__restrict", "__restrict__", "restrict",
                       "__inline", "__inline__"):
            i += 1
            continue
        out.append(toks[i])
        i += 1
    return out


PAIRS = {"(": ")", "[": "]", "{": "}"}


def match_close(toks, i):
    """Index of the bracket closing toks[i]."""
    depth = 0
    for j in range(i, len(toks)):
        if toks[j] in PAIRS:
            depth += 1
        elif toks[j] in (")", "]", "}"):
            depth -= 1
            if depth == 0:
                return j
    fail("unbalanced brackets")


def split_top(toks, sep):
    """Split a token list at sep tokens that are not nested in brackets."""
    parts, cur, depth = [], [], 0
    for t in toks:
        if t in PAIRS:
            depth += 1
        elif t in (")", "]", "}"):
            depth -= 1
        if t == sep and depth == 0:
            parts.append(cur)
            cur = []
        else:
            cur.append(t)
    if cur:
        parts.append(cur)
    return parts


def is_id(t):
    return re.match(r"[A-Za-z_]\w*$", t) is not None


def declarator_name(d):
    """(name, kind) of one declarator; kind is plain, flex, bitfield or None."""
    if "(" in d:
        # function pointer: first identifier after '(' and '*'s
        i = d.index("(") + 1
        while i < len(d) and d[i] in ("*", "const", "volatile"):
            i += 1
        if i < len(d) and is_id(d[i]):
            return d[i], "plain"
        return None, None
    cut = len(d)
    for stop in ("[", ":"):
        if stop in d:
            cut = min(cut, d.index(stop))
    ids = [t for t in d[:cut] if is_id(t)]
    if not ids:
        return None, None
    if ":" in d:
        return ids[-1], "bitfield"
    if "[" in d and d[d.index("[") + 1] == "]":
        return ids[-1], "flex"
    return ids[-1], "plain"


def parse_members(body):
    """Return list of (path, kind) for a struct/union body token list."""
    members = []
    for decl in split_top(body, ";"):
        if not decl:
            continue
        if "{" in decl:
            o = decl.index("{")
            c = match_close(decl, o)
            if decl[0] == "enum":
                inner, is_enum = [], True
            else:
                inner, is_enum = parse_members(decl[o + 1:c]), False
            rest = split_top(decl[c + 1:], ",")
            if not rest:
                if not is_enum:
                    members.extend(inner)  # anonymous struct/union
                continue
            for d in rest:
                name, kind = declarator_name(d)
                if not name:
                    continue
                members.append((name, kind))
                if kind == "plain" and "[" not in d and "*" not in d:
                    members.extend((name + "." + p, k) for p, k in inner)
            continue
        decls = split_top(decl, ",")
        for d in decls:
            name, kind = declarator_name(d)
            if name:
                members.append((name, kind))
    return members


def parse(toks):
    """Walk top-level tokens; collect structs, enums, enumerators, typedefs."""
    structs, enums, enumerators, typedefs = [], [], [], []
    seen = set()

    def scan(lo, hi):
        i = lo
        while i < hi:
            t = toks[i]
            if t in ("struct", "union", "enum") and i + 1 < hi:
                tag = toks[i + 1] if is_id(toks[i + 1]) else None
                o = i + 2 if tag else i + 1
                if o < hi and toks[o] == "{":
                    c = match_close(toks, o)
                    body = toks[o + 1:c]
                    if t == "enum":
                        if tag and ("enum", tag) not in seen:
                            seen.add(("enum", tag))
                            enums.append(tag)
                        for e in split_top(body, ","):
                            if e and is_id(e[0]) and e[0] not in enumerators:
                                enumerators.append(e[0])
                    else:
                        # nested definitions are also scanned at file level
                        scan(o + 1, c)
                        if tag and (t, tag) not in seen:
                            seen.add((t, tag))
                            structs.append((t, tag, parse_members(body)))
                    i = c + 1
                    continue
            if t == "typedef":
                end = i
                depth = 0
                while end < hi and not (toks[end] == ";" and depth == 0):
                    if toks[end] in PAIRS:
                        depth += 1
                    elif toks[end] in (")", "]", "}"):
                        depth -= 1
                    end += 1
                decl = toks[i + 1:end]
                if "{" in decl:
                    scan(i + 1, end)
                    c = match_close(decl, decl.index("{"))
                    tail = decl[c + 1:]
                else:
                    tail = decl
                if "(" not in tail and tail and is_id(tail[-1]):
                    typedefs.append(tail[-1])
                i = end + 1
                continue
            if t == "{":
                i = match_close(toks, i) + 1  # function body
                continue
            i += 1

    scan(0, len(toks))
    return structs, enums, enumerators, typedefs


def integer_macros(cc, incdir, extra, macros, skip):
    """Keep macros that expand to integer constant expressions."""
    cand = [(n, b) for n, b in macros if n not in skip]
    inc = "".join('#include <%s>\n' % h for h in HEADERS)
    for _ in range(20):
        lines = inc.splitlines()
        first = len(lines) + 1  # line number of probe 0
        for k, (n, _b) in enumerate(cand):
            lines.append("enum { abi_probe_%d = sizeof(char[((%s) & 0) + 1]) };" % (k, n))
        with tempfile.NamedTemporaryFile("w", suffix=".c", delete=False) as f:
            f.write("\n".join(lines) + "\n")
            path = f.name
        out = subprocess.run([cc, "-fsyntax-only", "-w", "-fmax-errors=0", "-I", incdir] +
                             extra + [path], capture_output=True, text=True)
        os.unlink(path)
        if out.returncode == 0:
            return [n for n, _b in cand]
        bad = set()
        for m in re.finditer(re.escape(path) + r":(\d+):(?:\d+:)? error", out.stderr):
            ln = int(m.group(1))
            if ln >= first:
                bad.add(ln - first)
        if not bad:
            fail("probe compile failed without attributable errors:\n" + out.stderr)
        cand = [c for k, c in enumerate(cand) if k not in bad]
    fail("integer macro probing did not converge")


PROBE = {
    "ABI_STRUCT": "sizeof(%s)", "ABI_TYPE": "sizeof(%s)",
    "ABI_MEMBER": "offsetof(%s)", "ABI_FLEX_MEMBER": "offsetof(%s)",
    "ABI_CONST": "sizeof(char[((%s) & 0) + 1])",
}


def probe(cc, ourdir, listfile, output):
    """Split the committed list into entries our headers have / lack."""
    hdrs = [h for h in HEADERS if os.path.exists(os.path.join(ourdir, h))]
    entries = []
    for line in open(listfile):
        m = re.match(r"(ABI_\w+)\((.*)\)\s*$", line)
        if m:
            entries.append((m.group(1), m.group(2), line))
    # empty stand-ins keep nested includes of missing headers off /usr/include
    stubs = tempfile.mkdtemp()
    for h in HEADERS:
        if h not in hdrs:
            os.makedirs(os.path.dirname(os.path.join(stubs, h)), exist_ok=True)
            open(os.path.join(stubs, h), "w").close()
    head = ["#include <stddef.h>"] + ["#include <%s>" % h for h in hdrs]
    alive = list(range(len(entries)))
    for _ in range(50):
        lines = list(head)
        for n, k in enumerate(alive):
            kind, arg, _l = entries[k]
            lines.append("enum { abi_probe_%d = (int)%s };" % (n, PROBE[kind] % arg))
        with tempfile.NamedTemporaryFile("w", suffix=".c", delete=False) as f:
            f.write("\n".join(lines) + "\n")
            path = f.name
        out = subprocess.run([cc, "-fsyntax-only", "-w", "-fmax-errors=0", "-I", ourdir, "-I", stubs, path],
                             capture_output=True, text=True)
        os.unlink(path)
        if out.returncode == 0:
            break
        bad = set()
        for m in re.finditer(re.escape(path) + r":(\d+):(?:\d+:)? error", out.stderr):
            ln = int(m.group(1)) - len(head) - 1
            if 0 <= ln < len(alive):
                bad.add(ln)
        if not bad:
            fail("probe compile failed in the headers themselves:\n" + out.stderr)
        alive = [k for n, k in enumerate(alive) if n not in bad]
    else:
        fail("probe did not converge")
    subprocess.run(["rm", "-rf", stubs])
    keep = set(alive)
    for h in HEADERS:
        if h not in hdrs:
            print("missing header: %s" % h)
    for k, (kind, arg, _l) in enumerate(entries):
        if k not in keep:
            print("missing: %s(%s)" % (kind, arg))
    text = "".join(entries[k][2] for k in alive)
    if output != "-":
        with open(output, "w") as f:
            f.write(text)
    sys.stderr.write("gen-abi-list: %d of %d entries compile against %s\n"
                     % (len(alive), len(entries), ourdir))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--incdir", default="/usr/include")
    ap.add_argument("--cc", default=os.environ.get("CC", "gcc"))
    ap.add_argument("-o", "--output", default="-")
    ap.add_argument("--probe", metavar="OURDIR")
    ap.add_argument("--list", default=os.path.join(os.path.dirname(
        os.path.abspath(__file__)), "abi_list.h"))
    args = ap.parse_args()
    if args.probe:
        probe(args.cc, args.probe, args.list, args.output)
        return
    extra = []
    if not os.path.exists(os.path.join(args.incdir, "rdma", "fabric.h")):
        fail("%s/rdma/fabric.h not found (install libfabric-dev)" % args.incdir)

    code, macros = preprocess(args.cc, args.incdir, extra)
    structs, enums, enumerators, typedefs = parse(tokenize(code))
    consts = list(enumerators)
    consts += integer_macros(args.cc, args.incdir, extra, macros, set(enumerators))

    ver = dict(macros)
    src_ver = "%s.%s" % (ver.get("FI_MAJOR_VERSION", "?"), ver.get("FI_MINOR_VERSION", "?"))
    n_mem = sum(1 for _t, _g, ms in structs for _m, k in ms if k != "bitfield")
    out = []
    out.append("/* Generated by gen-abi-list.py from libfabric %s headers; do not edit.\n"
               " * %d structs/unions, %d members, %d enum/typedef types, %d constants. */"
               % (src_ver, len(structs), n_mem, len(enums) + len(typedefs), len(consts)))
    out.append("")
    for kw, tag, members in structs:
        out.append("ABI_STRUCT(%s %s)" % (kw, tag))
        for path, kind in members:
            if kind == "bitfield":
                out.append("/* bitfield %s %s.%s: no offsetof */" % (kw, tag, path))
            elif kind == "flex":
                out.append("ABI_FLEX_MEMBER(%s %s, %s)" % (kw, tag, path))
            else:
                out.append("ABI_MEMBER(%s %s, %s)" % (kw, tag, path))
    out.append("")
    for e in enums:
        out.append("ABI_TYPE(enum %s)" % e)
    for t in typedefs:
        out.append("ABI_TYPE(%s)" % t)
    out.append("")
    for c in consts:
        out.append("ABI_CONST(%s)" % c)
    text = "\n".join(out) + "\n"
    if args.output == "-":
        sys.stdout.write(text)
    else:
        with open(args.output, "w") as f:
            f.write(text)
    sys.stderr.write("gen-abi-list: %d structs, %d members, %d types, %d constants\n"
                     % (len(structs), n_mem, len(enums) + len(typedefs), len(consts)))


if __name__ == "__main__":
    main()
