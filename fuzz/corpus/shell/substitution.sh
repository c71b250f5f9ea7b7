echo "today: $(date +%F)" `whoami` $(dirname $(readlink -f "$0")) `echo \`id\``
REV=$(git rev-parse HEAD)
