#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Instructions a callgrind profile spent inside one shared object, entered
from outside it (calls from the program, Open MPI, libc's thread start or the
loader's constructors), all threads: the object's own code and whatever it
called.  Also the inclusive count of one function (the first match).
  callgrind_into.py OBJECT_SUBSTRING FUNCTION PROFILE...
prints per profile: "PROFILE into N function M"."""
import re
import sys

NAME = re.compile(r'\((\d+)\)(?: (.*))?')


def scan(path, target, function):
    obs, fns = {}, {}
    ob = cob = cfn = None
    in_call = False
    into = 0
    func = None
    for line in open(path, errors='replace'):
        if line.startswith(('ob=', 'cob=', 'fn=', 'cfn=')):
            key, rest = line.rstrip('\n').split('=', 1)
            m = NAME.match(rest)
            table = obs if key in ('ob', 'cob') else fns
            if m and m.group(2):
                table[m.group(1)] = m.group(2)
            name = table.get(m.group(1), '') if m else rest
            if key == 'ob':
                ob, cob = name, None
            elif key == 'cob':
                cob = name
            elif key == 'cfn':
                cfn = name
            else:
                cob = None
        elif line.startswith('calls='):
            in_call = True
        elif in_call:
            in_call = False
            callee = cob if cob is not None else ob
            cost = int(line.split()[1])
            if target in (callee or '') and target not in (ob or ''):
                into += cost
            if func is None and cfn is not None and cfn.split('@')[0] == function:
                func = cost
            cob = None
    return into, func or 0


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    for path in sys.argv[3:]:
        into, func = scan(path, sys.argv[1], sys.argv[2])
        print(f'{path} into {into} function {func}')


if __name__ == '__main__':
    main()
