#!/bin/sh
# Slurm Prolog (slurm.conf: Prolog=/etc/slurm/nvsmi-agent/prolog.sh): records which GPUs this job
# holds, for nvsmi-agent --job-mapping-dir. The work is job-mapping.sh's, installed beside it.
exec /bin/sh "$(dirname -- "$0")/job-mapping.sh" record
