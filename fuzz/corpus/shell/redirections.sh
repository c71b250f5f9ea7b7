make 2>&1 >out < in &>log 3>&- >>app <>rw >|c 10<&0 <<<w x
