FOO=1 BAR="x y" make -j4 CC=gcc
A=1
