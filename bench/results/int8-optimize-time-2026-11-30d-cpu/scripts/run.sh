export AUTOGRAPH_LIBRARY=/work/main/build/libautograph.so AUTOGRAPH_NNCF_DIR=$HOME/.cache/autograph/nncf-3.4.0
for r in 1 2; do
 for t in A B; do
  cd /tmp/wt$t; echo "round $r tree $t int8 $(PYTHONPATH=python ~/.cache/autograph/venv/bin/python /tmp/ab/oneshot.py $1 int8 2>/dev/null | tail -1)"
 done
 cd /tmp/wtB; echo "round $r tree B bf16 $(PYTHONPATH=python ~/.cache/autograph/venv/bin/python /tmp/ab/oneshot.py $1 bf16 2>/dev/null | tail -1)"
done
