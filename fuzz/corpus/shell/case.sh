case $x in a) rm x;; *) ;; esac
