# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the bench scripts: median reads numbers, one per line, and
# prints their median ("-" for none).  The mean of the middle two keeps ten
# digits (awk's print keeps six: instruction counts need more).
median() { sort -n | awk '{a[NR]=$1} END {if (NR==0) print "-"; else if (NR%2) print a[(NR+1)/2]; else printf "%.10g\n", (a[NR/2]+a[NR/2+1])/2}'; }
