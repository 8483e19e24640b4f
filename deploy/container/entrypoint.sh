#!/bin/sh
# Container entrypoint for trainplane-server and trainplane-agent.
#
# Secrets arrive as files (compose secrets, Kubernetes secret volumes): for
# every TRAINPLANE_<NAME>_FILE variable this exports TRAINPLANE_<NAME> with
# the file's content (trailing newlines dropped) and unsets the _FILE
# variable, then execs the program. TRAINPLANE_DATABASE_URL_FILE=/run/secrets/db
# becomes TRAINPLANE_DATABASE_URL; TRAINPLANE_AGENT_TOKEN_FILE becomes
# TRAINPLANE_AGENT_TOKEN.
set -eu
for var in $(env | sed -n 's/^\(TRAINPLANE_[A-Z0-9_]*\)_FILE=.*/\1/p'); do
	eval "file=\${${var}_FILE}"
	if [ ! -r "$file" ]; then
		echo "entrypoint: ${var}_FILE: cannot read $file" >&2
		exit 2
	fi
	value=$(cat "$file")
	export "$var=$value"
	unset "${var}_FILE"
done
exec "$@"
