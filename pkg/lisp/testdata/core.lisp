;; arithmetic
(+ 1 2)
;=> 3
---
(+ 1 2.5)
;=> 3.5
---
(/ 10 4)
;=> 2.5
---
(/ 10 2)
;=> 5
---
(/ 1 0)
;;; "arithmetic_error: 1:1: division by zero"
---
(/ 1.0 0)
;=> ##Inf
---
(+ 9223372036854775807 1)
;;; "integer overflow"
---
(+ 1 nil)
;;; "type_error: 1:1: \\+: expected number, got nil \\(arg 2\\)"
---
(map inc [1 2 3])
;=> [2 3 4]
---
(filter #(> % 1) [1 2 3])
;=> [2 3]
---
(reduce + 0 [1 2 3])
;=> 6
---
(let [x 1 y (+ x 1)] [x y])
;=> [1 2]
---
(defn fact [n] (if (<= n 1) 1 (* n (fact (dec n)))))
(fact 10)
;=> 3628800
---
(loop [i 0 acc 0] (if (< i 5) (recur (inc i) (+ acc i)) acc))
;=> 10
---
[(== 1 1.0) (== 1 2)]
;=> [true false]
---
(filterv even? [1 2 3 4])
;=> [2 4]
---
[(apply + nil) (apply + []) (apply * nil) (apply + 1 nil) (apply str "abc")]
;=> [0 0 1 1 "abc"]
---
(do (defn f [& xs] (apply + xs)) [(f) (f 1 2)])
;=> [0 3]
---
(apply + 1 2)
;;; "type_error: 1:1: apply: expected a collection or nil as the last argument, got 2 \\(arg 3\\)"
---
;; ensure-reduced, unreduced
[(reduced? (ensure-reduced 1)) (unreduced (ensure-reduced (reduced 2))) (unreduced 5) (reduce (fn [a x] (if (> a 5) (ensure-reduced a) (+ a x))) 0 (range 10))]
;=> [true 2 5 6]
---
;; primed arithmetic: 64-bit integers, so overflow is an error (Clojure promotes)
[(+' 1 2) (-' 5 7) (*' 3 4) (inc' 1) (dec' 1.5) (+') (*') (+' 1.5 2)]
;=> [3 -2 12 2 0.5 0 1 3.5]
---
(+' 9223372036854775807 1)
;;; "integer overflow"
---
(inc' 9223372036854775807)
;;; "integer overflow"
---
(dec' -9223372036854775808)
;;; "integer overflow"
---
(-' -9223372036854775808 1)
;;; "integer overflow"
---
(*' 4611686018427387904 2)
;;; "integer overflow"
---
;; reduce without init over no items calls (f), as Clojure
(reduce max [])
;;; "arity_error: .*max expects 1 or more args, got 0(.|\n)*hint: reduce of no items without an init value calls \\(f\\)"
---
;; a computed set or map literal with two equal keys is an error, as Clojure
(let [a 1 b 1] #{a b})
;;; "value_error: .*set literal: duplicate key: 1"
---
(let [a 1 b 1] {a :x b :y})
;;; "value_error: .*map literal: duplicate key: 1"
---
(let [a 1 b 2] [#{a b} {a :x b :y}])
;=> [#{1 2} {1 :x 2 :y}]
