#!/bin/sh
# Slurm Epilog (slurm.conf: Epilog=/etc/slurm/nvsmi-agent/epilog.sh): clears this job's GPU
# records, which prolog.sh wrote. The work is job-mapping.sh's, installed beside it.
exec /bin/sh "$(dirname -- "$0")/job-mapping.sh" clear
