#!/usr/bin/env bash
# The layers of src/ (src/README.md): every quoted #include of a file
# under src/LAYER/ must name a header of its own layer, of a layer below
# it, or of include/kria. The pure core is also held by the build (it is
# compiled with -Iinclude only); this catches the edges between the
# loop-bound layers, which share one include path.
set -u
top=${KRIA_TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$top" || exit 2

# LAYER: the layers it may include (besides itself and include/kria).
declare -A may=(
  [core]=""
  [base]="core"
  [net]="core base"
  [store]="core base"
  [archive]="core base store"
  [crawl]="core base net store archive"
  [service]="core base net store archive crawl"
  [sim]="core base store archive"
  [cli]="core base net store archive crawl service sim"
)

# Edges that are known and on their way out (empty when none).
known=()

n=0
t() { # ok|fail message
  n=$((n + 1))
  if [ "$1" = ok ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi
}

# header name -> its layer
declare -A where=()
for h in src/*/*.h; do
  l=${h#src/}; l=${l%%/*}
  b=$(basename "$h")
  if [ -n "${where[$b]:-}" ]; then t fail "header $b is in two layers (${where[$b]}, $l)"; fi
  where[$b]=$l
done

layers_seen=0
for d in src/*/; do
  l=$(basename "$d")
  if [ -z "${may[$l]+x}" ]; then t fail "src/$l is not a known layer (add it here and to src/README.md)"; continue; fi
  layers_seen=$((layers_seen + 1))
  bad=()
  for f in "$d"*.c "$d"*.h; do
    [ -f "$f" ] || continue
    while IFS= read -r inc; do
      case $inc in kria/*) [ -f "include/$inc" ] || bad+=("$f: $inc (no such header)"); continue ;; esac
      to=${where[$inc]:-}
      if [ -z "$to" ]; then
        [ -f "$d$inc" ] || bad+=("$f: $inc (not in src/*/)")
        continue
      fi
      [ "$to" = "$l" ] && continue
      case " ${may[$l]} " in *" $to "*) continue ;; esac
      edge="$f -> $to/$inc"
      case " ${known[*]} " in *" $edge "*) echo "# known, to go: $edge"; continue ;; esac
      bad+=("$edge")
    done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
  done
  if [ ${#bad[@]} -eq 0 ]; then
    t ok "src/$l includes only ${may[$l]:-include/kria}"
  else
    t fail "src/$l includes across a forbidden edge:"
    printf '#   %s\n' "${bad[@]}"
  fi
done
[ "$layers_seen" -ge 9 ] && t ok "nine layers" || t fail "only $layers_seen layers under src/"

# No loop-bound module borrows a pure module's prefix: a name kr_M_* or
# kr__M_* outside src/core, where M is a header of include/kria, must be
# declared in include/kria (kr_warc_* is the WARC format's, the writer is
# kr_archive_*).
shadow=()
for h in include/kria/*.h; do
  m=$(basename "$h" .h)
  while IFS= read -r name; do
    grep -qw -- "$name" include/kria/*.h || shadow+=("$name ($m)")
  done < <(grep -rhoE "\bkr_{1,2}${m}_[a-z0-9_]+" src/base src/net src/store src/archive \
             src/crawl src/service src/sim src/cli | sort -u)
done
if [ ${#shadow[@]} -eq 0 ]; then t ok "no module shadows a pure module's prefix"
else t fail "names that shadow a pure module's prefix: ${shadow[*]}"; fi

# Nothing is left at the top of src/ but README.md.
stray=$(find src -maxdepth 1 -type f ! -name README.md | head -5)
[ -z "$stray" ] && t ok "src/ holds folders only" || t fail "files at the top of src/: $stray"

echo "1..$n"
