(cd sub && make) || { echo failed; exit 1; }
