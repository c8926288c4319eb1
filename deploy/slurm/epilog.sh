#!/bin/sh
# Slurm Epilog (slurm.conf: Epilog=/etc/slurm/nvsmi-agent/epilog.sh): writes the job's GPU summary
# where its user finds it, where the site asked for it (job-summary.sh), then clears this job's GPU
# records, which prolog.sh wrote (job-mapping.sh). Both are installed beside it.
/bin/sh "$(dirname -- "$0")/job-summary.sh"
exec /bin/sh "$(dirname -- "$0")/job-mapping.sh" clear
