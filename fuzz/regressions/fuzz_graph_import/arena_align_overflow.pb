
overflow
aRelux"y
x 
y ýÿÿÿÿÿÿÿ"x*y