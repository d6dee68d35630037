#!/bin/bash
Z=/work/main/models/zoo
for m in squeezenet inception_v3 nasnet_a_mobile; do
  for side in before after; do
    if [ $side = before ]; then CLI=/tmp/before/build/autograph; else CLI=/work/main/build/autograph; fi
    for method in autograph ios; do
      $CLI optimize $Z/$m.pt -o /tmp/cmp_${side}_${m}_${method}.pt --method $method --cost analytical --verify 0 --no-check-rewrites --json > /tmp/cmp_${side}_${m}_${method}.json 2>/tmp/cmp_${side}_${m}_${method}.err
      echo "$side $m $method rc=$?"
    done
  done
done
