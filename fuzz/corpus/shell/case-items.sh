case "$1" in
  start|run) exec daemon ;;
  (stop) kill "$(cat pid)";;
  *.txt) ;&
  *) echo usage; exit 1;;&
esac
