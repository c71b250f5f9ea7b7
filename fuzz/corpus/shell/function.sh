f() { rm x; }; f
function g { :; }
