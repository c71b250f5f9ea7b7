diff <(ls a) >(gzip)
