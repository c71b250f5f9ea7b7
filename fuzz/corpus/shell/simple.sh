ls -la /tmp
