;; builtins_math.go: numbers, the Math/ statics and bit operations
;; mod is floored (sign of the divisor), rem truncated (sign of the dividend)
[(mod -7 2) (mod 7 -2) (mod 7 2) (mod -7 -2) (mod 6 3) (mod -6 3)]
;=> [1 -1 1 -1 0 0]
---
[(rem -7 2) (rem 7 -2) (rem 7 2) (quot 7 2) (quot -7 2) (quot 7 -2)]
;=> [-1 1 1 3 -3 -3]
---
;; a float operand gives a float
[(mod 5.5 2) (mod -5.5 2) (mod 6.0 3) (rem -5.5 2) (quot 7.5 2) (quot -7.5 2)]
;=> [1.5 0.5 0.0 -1.5 3.0 -3.0]
---
[(mod -9223372036854775808 -1) (rem 5 -1) (quot 5 -1)]
;=> [0 0 -5]
---
(quot -9223372036854775808 -1)
;;; "arithmetic_error: 1:1: integer overflow"
---
(mod 1 0)
;;; "arithmetic_error: 1:1: division by zero"
---
(rem 1.5 0)
;;; "arithmetic_error: 1:1: division by zero"
---
(quot 10 0.0)
;;; "arithmetic_error: 1:1: division by zero"
---
(mod nil 2)
;;; "type_error: 1:1: mod: expected number, got nil \\(arg 1\\)"
---
(rem 7 "2")
;;; "type_error: 1:1: rem: expected number, got string \"2\" \\(arg 2\\)"
---
(mod 1 2 3)
;;; "arity_error: 1:1: mod expects 2 args, got 3"
---
[(abs -5) (abs 5) (abs -5.5) (abs 0) (abs ##-Inf)]
;=> [5 5 5.5 0 ##Inf]
---
(abs -9223372036854775808)
;;; "arithmetic_error: 1:1: integer overflow"
---
(abs nil)
;;; "type_error: 1:1: abs: expected number, got nil \\(arg 1\\)"
---
[(num 3) (num -2.5) (num ##Inf)]
;=> [3 -2.5 ##Inf]
---
(num "3")
;;; "type_error: 1:1: num: expected number, got string \"3\" \\(arg 1\\)"
---
;; max/min return the argument itself (its type kept); ties pick the later one
[(max 1 2 3) (min 4 2 8) (max 1 2.0) (max 2 1.0) (min 1) (max -1.5 -2) (max 2 2.0) (min 2.0 2)]
;=> [3 2 2.0 2 1 -1.5 2.0 2]
---
[(max 1 ##NaN 3) (min ##NaN 1) (max ##-Inf 0)]
;=> [##NaN ##NaN 0]
---
(max)
;;; "arity_error: 1:1: max expects 1 or more args, got 0"
---
(max 1 nil)
;;; "type_error: 1:1: max: expected number, got nil \\(arg 2\\)"
---
(apply min [3 1 2])
;=> 1
---
(min "a" "b")
;;; "type_error: 1:1: min: expected number, got string \"a\" \\(arg 1\\)"
---
;; floor ceil round trunc return integers; round is half away from zero
[(floor 2.7) (floor -2.7) (ceil 2.1) (ceil -2.1) (round 2.5) (round -2.5) (round 2.4) (trunc 2.7) (trunc -2.7) (floor 3)]
;=> [2 -3 3 -2 3 -3 2 2 -2 3]
---
;; Inf and NaN pass through
[(floor ##Inf) (ceil ##-Inf) (round ##NaN) (trunc ##Inf)]
;=> [##Inf ##-Inf ##NaN ##Inf]
---
(floor 1e300)
;;; "arithmetic_error: 1:1: integer overflow"
---
(round "2.5")
;;; "type_error: 1:1: round: expected number, got string \"2.5\" \\(arg 1\\)"
---
;; (round x places) keeps a float
[(round 3.14159 2) (round 2.675 0) (round -1.005 1) (round 10 2)]
;=> [3.14 3.0 -1.0 10.0]
---
(round 1.5 -1)
;;; "value_error: 1:1: round: decimal places must be between 0 and 15, got -1"
---
[(sqrt 16) (sqrt 2.25) (sqrt -1) (sqrt 0)]
;=> [4.0 1.5 ##NaN 0.0]
---
[(pow 2 10) (pow 2 -1) (pow 2.5 2) (pow 0 0)]
;=> [1024.0 0.5 6.25 1.0]
---
(pow 2 nil)
;;; "type_error: 1:1: pow: expected number, got nil \\(arg 2\\)"
---
[(double 3) (float 3) (double 2.5) (int 3.9) (int -3.9) (long 3.9) (int 7) (long -2.5)]
;=> [3.0 3.0 2.5 3 -3 3 7 -2]
---
(int ##NaN)
;;; "arithmetic_error: 1:1: int: cannot convert ##NaN to an integer"
---
(long ##Inf)
;;; "arithmetic_error: 1:1: long: cannot convert ##Inf to an integer"
---
(int 1e20)
;;; "arithmetic_error: 1:1: int: value out of range: 1.0E20"
---
(int "5")
;;; "type_error: 1:1: int: expected number, got string \"5\" \\(arg 1\\)\n(?s:.*)hint: use parse-long"
---
(double nil)
;;; "type_error: 1:1: double: expected number, got nil \\(arg 1\\)"
---
;; Math/ statics follow Java: round → integer (floor(x+0.5)), floor/ceil → float
[(Math/round 2.5) (Math/round -2.5) (Math/round 2.4999) (Math/round 7) (Math/round ##NaN) (Math/round 1e20) (Math/round -1e20)]
;=> [3 -2 2 7 0 9223372036854775807 -9223372036854775808]
---
[(Math/floor 2.7) (Math/floor 3) (Math/ceil 2.1) (Math/ceil -0.5) (Math/rint 2.5) (Math/rint 3.5)]
;=> [2.0 3.0 3.0 -0.0 2.0 4.0]
---
[(Math/abs -3) (Math/abs -3.5) (Math/pow 2 10) (Math/sqrt 16) (Math/max 3 2) (Math/min 1 2) (Math/max 1.5 2)]
;=> [3 3.5 1024.0 4.0 3 1 2]
---
[(Math/exp 0) (Math/log 1) (Math/log10 1000) (Math/cbrt 27) (Math/hypot 3 4) (Math/signum -2.5) (Math/signum 0) (Math/signum 7)]
;=> [1.0 0.0 3.0 3.0 5.0 -1.0 0.0 1.0]
---
(Math/max 1)
;;; "arity_error: 1:1: Math/max expects 2 args, got 1"
---
(Math/sqrt "4")
;;; "type_error: 1:1: Math/sqrt: expected number, got string \"4\" \\(arg 1\\)"
---
;; used as values in pipelines
(map Math/round [1.5 2.5 -0.5])
;=> [2 3 0]
---
(reduce max [3 9 2])
;=> 9
---
(->> [1.26 2.5 3.74] (map #(round % 1)) (reduce +))
;=> 7.5
---
[(Math/floorDiv 7 2) (Math/floorDiv -7 2) (Math/floorDiv 7 -2) (Math/floorMod -7 2) (Math/floorMod 7 -2) (Math/floorMod 6 3)]
;=> [3 -4 -4 1 -1 0]
---
(Math/floorDiv 1 0)
;;; "arithmetic_error: 1:1: division by zero"
---
(Math/floorMod 5.5 2)
;;; "type_error: 1:1: Math/floorMod: expected integer, got 5.5 \\(arg 1\\)"
---
[(Math/sin 0) (Math/cos 0) (Math/tan 0) (Math/asin 1) (Math/acos 1) (Math/atan 0) (Math/atan2 0 1) (Math/toDegrees Math/PI) (Math/toRadians 180)]
;=> [0.0 1.0 0.0 1.5707963267948966 0.0 0.0 0.0 180.0 3.141592653589793]
---
;; a static field in parentheses reads it, as Clojure's (Classname/field)
[(Math/PI) (* 2 (Math/E)) (Integer/MAX_VALUE) (Long/MIN_VALUE)]
;=> [3.141592653589793 5.43656365691809 2147483647 -9223372036854775808]
---
(Math/PI 2)
;;; "not_callable: 1:1: Math/PI is a constant, not a function: write it without parentheses"
---
;; float rem/mod follow Clojure's n - trunc(n/d)*d, not fmod
[(rem 2 1e-3) (mod 1e10 1e-3) (rem -0.5 1e-3) (mod -9223372036854775808 2.5) (mod 7.5 -2)]
;=> [0.0 0.0 0.0 0.0 -0.5]
---
[(bit-and 12 10) (bit-and 12 10 8) (bit-or 12 3) (bit-or 1 2 4) (bit-xor 12 10) (bit-xor 1 2 3) (bit-and-not 15 1) (bit-and-not 15 1 2) (bit-not 5) (bit-not -1)]
;=> [8 8 15 7 6 0 14 12 -6 0]
---
;; shift counts and bit indexes are taken modulo 64, as in Java
[(bit-shift-left 1 10) (bit-shift-left 1 64) (bit-shift-left 1 65) (bit-shift-left 1 -1) (bit-shift-right -16 2) (bit-shift-right 16 66) (unsigned-bit-shift-right -1 60) (unsigned-bit-shift-right 16 2)]
;=> [1024 1 2 -9223372036854775808 -4 4 15 4]
---
[(bit-set 0 3) (bit-set 0 63) (bit-clear 15 0) (bit-flip 5 1) (bit-flip 5 0) (bit-test 5 2) (bit-test 5 1) (bit-test -1 63)]
;=> [8 -9223372036854775808 14 7 4 true false true]
---
(bit-and 1.5 1)
;;; "type_error: 1:1: bit-and: expected integer, got 1.5 \\(arg 1\\)"
---
(bit-shift-left 1 nil)
;;; "type_error: 1:1: bit-shift-left: expected integer, got nil \\(arg 2\\)"
---
(bit-and 1)
;;; "arity_error"
---
;; mod, quot, rem whose quotient is NaN or infinite throw, as Clojure
(mod ##NaN 2)
;;; "arithmetic_error: 2:1: mod: the quotient of ##NaN and 2 is not finite"
---
(quot ##Inf 2)
;;; "quot: the quotient of ##Inf and 2 is not finite"
---
(rem 1e300 1e-300)
;;; "rem: the quotient of .* is not finite"
---
[(mod 5 ##Inf) (quot 2 ##Inf) (rem 5 ##Inf) (compare ##NaN 1) (compare 1 ##NaN) (Math/pow 1 ##NaN) (Math/pow -1 ##Inf) (Math/pow 0.5 ##Inf) (str #"a+") (str "x" #"a+b")]
;=> [##NaN 0.0 ##NaN 0 0 ##NaN ##NaN 0.0 "a+" "xa+b"]
---
;; range over integers near the ends of int64 counts exactly
[(count (range 9223372036854775800 9223372036854775807 3)) (range -9223372036854775807 -9223372036854775808 -1) (count (range -9223372036854775808 9223372036854775807 4611686018427387904))]
;=> [3 [-9223372036854775807] 4]
---
;; float: 64-bit, but past float's range (an infinity too) is out of range, as Clojure
(float ##Inf)
;;; "value_error: .*float: value out of range for float: ##Inf"
---
(float -1e39)
;;; "value_error: .*float: value out of range for float: -1.0E39"
