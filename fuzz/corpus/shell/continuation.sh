make \
  -j4 \
  all && ec\
ho ok
FO\
O=1 rm
