#!/bin/bash
# Byte-identity of a change: sample corpora -> ingest -> process with the duetflow package under
# SRC, and the sha256 of every file written (FLACs, turn and dialogue tables, stats).
#   bench/byte_identity.sh SRC OUTDIR [SCALE]   ->  OUTDIR/sha256.txt
# Run it for the tree before (e.g. `git archive main src | tar -x -C /tmp/before`) and after,
# then diff the two lists. The intake tables hold the samples' absolute paths, so compare those
# only when OUTDIR is the same path (`grep -v 'intake/.*/dialogues.parquet'` otherwise).
# DUETFLOW names the command (default: `duetflow` on PATH); CONFIG, a run config file for the
# process step (e.g. one holding the bundled default.yaml's `render` section: band-limit, floor,
# room tone colour), else the code's defaults.
set -e
SRC=$1; OUT=$2; SCALE=${3:-1}
rm -rf $OUT; mkdir -p $OUT
D="env PYTHONPATH=$SRC ${DUETFLOW:-duetflow}"
$D samples make --seed 0 --scale $SCALE $OUT/samples >/dev/null
ls $OUT/samples
for c in dailytalk:dailytalk iemocap:IEMOCAP_full_release magicdata_ramc:MagicData-RAMC; do
  name=${c%%:*}; root=${c##*:}
  $D ingest --corpus $name --root $OUT/samples/$root --workdir $OUT/intake/$name --no-progress >/dev/null
  $D process --intake $OUT/intake/$name --workdir $OUT/rendered/$name ${CONFIG:+-c $CONFIG} --no-progress >/dev/null
done
(cd $OUT && find intake rendered -type f | LC_ALL=C sort | xargs sha256sum) > $OUT/sha256.txt
wc -l $OUT/sha256.txt
