;; Fast paths added for performance (compile-time folding, cursors, ...):
;; each chunk pins the behaviour the fast path must keep.

;; (fnil + 0) with constant args is built once per call site
(reduce (fn [m r] (update m (:k r) (fnil + 0) (:n r))) {} [{:k :a :n 1} {:k :b :n 2} {:k :a :n 3}])
;=> {:a 4 :b 2}
---
;; a local shadowing the builtin is not folded
(let [+ (fn [a b] (* 10 (or a 1) b))] ((fnil + 5) nil 2))
;=> 100
---
;; a local default is not folded either
(map (fn [d] ((fnil inc d) nil)) [1 2 3])
;=> [2 3 4]
---
(map (fn [x] ((partial + 1) x)) [1 2])
;=> [2 3]
---
((comp str inc) 41)
;=> "42"
---
((complement nil?) 1)
;=> true
---
((constantly :x) 1 2 3)
;=> :x
---
((juxt inc dec) 1)
;=> [2 0]
---
((some-fn even? neg?) 1 3 -1)
;=> true
---
((every-pred pos? odd?) 1 3 5)
;=> true
---
;; a folded constructor still counts its step
;; @looplimit 100
(loop [i 0] (if (< i 3) (do (fnil inc 0) (recur (inc i))) i))
;=> 3
---
;; fnil with a non-function is an error at call time, as before
((fnil 1 0) nil)
;;; "not_callable: 2:1: not callable: 1"
