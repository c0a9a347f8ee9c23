#!/usr/bin/env bash
# Rebuild toolrag/decision/model.json from the public training sets and check it against the shipped file, byte
# for byte (CPU only; 2 cores: about 14 minutes from an empty bench folder, docs/decisions.md).
#
#   bash scripts/reproduce_decision_model.sh [training folder]   # default $TOOLRAG_TRAINING or ../shared/training
#
# The shipped heads were fitted on episodes searched by earlier revisions of toolrag (docs/decisions.md says why
# the text heads stay on them): the text episodes by d76652b, the image episodes by 3c79bf7. Each is searched by
# its own revision, checked out beside this one (git worktree), into the bench folder ($TOOLRAG_BENCH_DIR, default
# <temp>/toolrag-bench); this revision then searches the episodes with earlier turns and the conversations, fits
# every head and writes the file. The shipped file is kept in the bench folder as model-shipped.json; the rebuilt
# one is left in place (`git diff`; `git checkout toolrag/decision/model.json` puts the shipped one back). It must
# equal the shipped file but for the day in its version (the day it was written). Searched episodes already in
# the bench folder are reused: start from an empty one to search everything again.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
training=${1:-${TOOLRAG_TRAINING:-$repo/../shared/training}}
if [ ! -f "$training/README.md" ]; then
    echo "reproduce_decision_model.sh: no training sets at '$training' (its README.md is missing): pass the folder" \
         "of the public training sets (shared/training) as the first argument, or set TOOLRAG_TRAINING" >&2
    exit 2
fi
training=$(cd "$training" && pwd)
bench=${TOOLRAG_BENCH_DIR:-${TMPDIR:-/tmp}/toolrag-bench}
export TOOLRAG_BENCH_DIR=$bench
mkdir -p "$bench"
TEXT_REVISION=d76652b    # searched decision-episodes-115589bbc1bb1531.pkl
IMAGE_REVISION=3c79bf7   # searched the image episodes the image heads were fitted on
TEXT_EPISODES=$bench/decision-episodes-115589bbc1bb1531.pkl

work=$(mktemp -d)
cleanup() {
    for rev in "$TEXT_REVISION" "$IMAGE_REVISION"; do
        git -C "$repo" worktree remove --force "$work/$rev" 2>/dev/null || true
    done
    rm -rf "$work"
}
trap cleanup EXIT

# the photos of the image episodes: scikit-image's sample photographs (bench/decision_images.py)
python -m pip download -q scikit-image==0.25.2 --no-deps -d "$work/skimage"
python -m zipfile -e "$work"/skimage/scikit_image-*.whl "$work/skimage"

for rev in "$TEXT_REVISION" "$IMAGE_REVISION"; do
    git -C "$repo" worktree add --detach "$work/$rev" "$rev" >/dev/null
done
if [ ! -f "$TEXT_EPISODES" ]; then  # `python -m` in the worktree imports that revision's toolrag
    (cd "$work/$TEXT_REVISION" && python -m bench.decision_train --training "$training" --families trees)
fi
if ! ls "$bench"/decision-images-*.pkl >/dev/null 2>&1; then
    (cd "$work/$IMAGE_REVISION" && python -m bench.decision_train --training "$training" --families trees \
        --text-episodes "$TEXT_EPISODES" --skimage-data "$work/skimage/skimage/data")
fi

cp "$repo/toolrag/decision/model.json" "$bench/model-shipped.json"
(cd "$repo" && python -m bench.decision_train --training "$training" --text-episodes "$TEXT_EPISODES" --reuse \
    --families trees,logistic --export)
python - "$bench/model-shipped.json" "$repo/toolrag/decision/model.json" <<'EOF'
import json
import sys

# the version is the day it was written and a digest of the heads and points: the day differs on another day
shipped, rebuilt = (json.load(open(path, encoding="utf-8")) for path in sys.argv[1:])
differ = [k for k in sorted(set(shipped) | set(rebuilt)) if shipped.get(k) != rebuilt.get(k)
          and not (k == "version" and shipped[k].split("-")[-1] == rebuilt[k].split("-")[-1])]
if differ:
    sys.exit(f"the rebuilt model.json differs from the shipped one in: {', '.join(differ)}")
print("the rebuilt model.json is the shipped one" + ("" if shipped == rebuilt else ", but for the day in its version"))
EOF
