#!/bin/bash
# DSR of `measure tasks --in vm` with observation off, then on (the guest agent + `host observe`),
# alternated off/on/off/on (docs/PERFORMANCE.md "Observation overhead"). As root, under the host
# lock: flock /tmp/rtvirt-host.lock bash experiments/observe_dsr_in_vm.sh [SCENARIO]
# Writes tasks-{off,on}-N.json and observe-PID.json in the current directory.
R=${RTVIRT:-target/debug/rtvirt}
S=${1:-scenarios/default.toml}
for mode in off on off on; do
  if [ $mode = on ]; then extra=--agent; else extra=; fi
  "$R" measure tasks "$S" --in vm --guest-kernel nrt $extra --duration 20s --format json > tasks-$mode-$RANDOM.json 2> err-$mode.txt &
  pid=$!
  if [ $mode = on ]; then
    d=/run/rtvirt/vm/rtvirt-measure-$pid
    i=0; while [ ! -S $d/agent.sock ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done
    "$R" host observe --vm rtvirt-measure-$pid --duration 60s --format json > observe-$pid.json 2> observe-err-$pid.txt &
  fi
  wait $pid
  wait
done
