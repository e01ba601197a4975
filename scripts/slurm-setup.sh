#!/usr/bin/env bash
# A single-node Slurm cluster on 127.0.0.1 for tests and trials (run as root; idempotent).
# Installs slurm-wlm + munge with apt when sbatch is absent, writes slurm.conf for this machine
# (no cgroups, no accounting daemon: the executor reads outcome files and squeue; the scheduler passes every
# second, not every minute, which cuts an array task's start on this one node from ~2.2 s to ~0.4 s), starts munged,
# slurmctld and slurmd, waits until the node takes jobs, and prints one line.
set -euo pipefail

if [ "$(id -u)" != 0 ]; then echo "slurm-setup: run as root" >&2; exit 1; fi
if ! command -v sbatch >/dev/null || ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq slurm-wlm munge >/dev/null
fi

CONF_DIR=/etc/slurm
mkdir -p "$CONF_DIR" /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge /var/lib/slurm/jobcomp
chown -R slurm:slurm /var/spool/slurmctld /var/log/slurm 2>/dev/null || true
CPUS=$(nproc)
MEM_MB=$(awk '/MemTotal/ {print int($2/1024*0.9)}' /proc/meminfo)

CONF="$CONF_DIR/slurm.conf"
WANT=$(cat <<CONF
ClusterName=peneira
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1,sched_min_interval=0,bf_interval=1
MaxArraySize=1001
MinJobAge=300
KillWait=5
InactiveLimit=0
SlurmctldTimeout=30
SlurmdTimeout=60
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$MEM_MB State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
)
if [ ! -f "$CONF" ] || [ "$(cat "$CONF")" != "$WANT" ]; then
  printf '%s\n' "$WANT" > "$CONF"
  CHANGED=1
else
  CHANGED=0
fi

if [ ! -s /etc/munge/munge.key ]; then
  mkdir -p /etc/munge
  dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
fi
chown -R munge:munge /etc/munge /run/munge /var/lib/munge /var/log/munge 2>/dev/null || true
chmod 400 /etc/munge/munge.key
if ! pgrep -x munged >/dev/null; then
  runuser -u munge -- /usr/sbin/munged --force 2>/dev/null || /usr/sbin/munged --force
fi

if [ "$CHANGED" = 1 ]; then  # a new configuration: restart the daemons that read it
  for d in slurmctld slurmd; do
    if [ -f "/run/$d.pid" ]; then kill "$(cat "/run/$d.pid")" 2>/dev/null || true; fi
    for _ in $(seq 30); do pgrep -x "$d" >/dev/null || break; sleep 1; done  # gone before it is started again
  done
fi
start() {  # a daemon that fails to start: its log's last lines, not a silent exit
  pgrep -x "$1" >/dev/null || "/usr/sbin/$1" || { echo "slurm-setup: $1 did not start:" >&2; tail -n 5 "/var/log/slurm/$1.log" >&2; exit 1; }
}
start slurmctld
start slurmd

for _ in $(seq 30); do
  if timeout 10 sinfo -h -o %T 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then
    echo "slurm-setup: single-node Slurm $(sinfo -V | awk '{print $2}') up on 127.0.0.1 ($CPUS CPUs, ${MEM_MB} MB, partition debug)"
    exit 0
  fi
  timeout 10 scontrol update nodename=localhost state=resume >/dev/null 2>&1 || true
  sleep 1
done
echo "slurm-setup: Slurm did not come up; see /var/log/slurm/slurmctld.log and slurmd.log" >&2
sinfo >&2 || true
exit 1
