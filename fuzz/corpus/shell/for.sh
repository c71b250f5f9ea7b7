for f in *.c "a b"; do gcc -c "$f"; done
for a; do echo $a; done
for b do x; done
