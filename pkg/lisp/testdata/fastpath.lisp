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
---
;; loop cursors: (rest xs) advances a loop-private header in place; every
;; other use of xs in the same recur still sees the old position
(loop [rs [1 2 3 4] acc []] (if (empty? rs) acc (recur (rest rs) (conj acc [(first rs) (count rs)]))))
;=> [[1 4] [2 3] [3 2] [4 1]]
---
;; the cursor is read after the advance is decided (argument order kept)
(loop [acc [] rs [1 2 3]] (if (seq rs) (recur (conj acc (first rs) (count rs)) (next rs)) acc))
;=> [1 3 2 2 3 1]
---
;; a binding that escapes is not a cursor: the kept views stay intact
(loop [rs [1 2 3] seen []] (if (empty? rs) seen (recur (rest rs) (conj seen rs))))
;=> [[1 2 3] [2 3] [3]]
---
(loop [rs [1 2 3] fs []] (if (empty? rs) (map #(%) fs) (recur (rest rs) (conj fs (fn [] (first rs))))))
;=> [1 2 3]
---
;; a re-entered loop starts from its own input again
(mapv (fn [v] (loop [rs v acc 0] (if (empty? rs) acc (recur (rest rs) (+ acc (first rs)))))) [[1 2] [3 4 5]])
;=> [3 12]
---
;; the input vector is never changed
(let [v [1 2 3 4]] (loop [rs v] (if (next rs) (recur (next rs)) [(first rs) v])))
;=> [4 [1 2 3 4]]
---
;; nested loops over the same data
(loop [xs [1 2] out []] (if (empty? xs) out (recur (rest xs) (conj out (loop [ys [10 20] s 0] (if (empty? ys) (+ s (first xs)) (recur (rest ys) (+ s (first ys)))))))))
;=> [31 32]
---
;; lazy seqs and strings take the ordinary path
[(loop [rs (range 4) acc 0] (if (empty? rs) acc (recur (rest rs) (+ acc (first rs)))))
 (loop [cs "abc" acc ""] (if (empty? cs) acc (recur (rest cs) (str (first cs) acc))))]
;=> [6 "cba"]
---
;; a local named rest is not the builtin
(let [rest (fn [v] (vec (drop 2 v)))] (loop [rs [1 2 3 4 5] acc []] (if (empty? rs) acc (recur (rest rs) (conj acc (first rs))))))
;=> [1 3 5]
---
;; the step still counts: a loop over 5 items ends in the step limit like before
;; @looplimit 3
(loop [rs [1 2 3 4 5]] (if (empty? rs) :done (recur (rest rs))))
;;; "loop_limit"
---
;; (count (split s sep)) counts without building the pieces: same rules as split
[(count (split "a b  c" " ")) (count (split "a,b,,," ",")) (count (split ",,," ",")) (count (split "" " "))
 (count (split "abc" " ")) (count (split "a--b--" "--")) (count (split "x" "")) (count (split "a b" #" "))
 (count (split nil " ")) (count (split "a b c" " " 2)) (count (clojure.string/split "1 2" " "))]
;=> [4 2 0 1 1 2 1 2 0 2 2]
---
(count (split 42 " "))
;;; "type_error: 1:8: split: expected string, got 42 \\(arg 1\\)"
---
(count (split "a b" 1))
;;; "type_error: 1:8: split: expected a string or regex separator, got 1 \\(arg 2\\)"
---
;; the pieces are still charged to the allocation budget
;; @maxmemory 4000
;; @ctx {"s": "a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,"}
(count (split ctx/s ","))
;;; "memory_limit"
---
;; @maxmemory 4000
;; @ctx {"s": "a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,"}
(count ctx/s)
;=> 2000
---
(let [split (fn [s _] [s])] (count (split "a b" " ")))
;=> 1
---
(count "héllo")
;=> 5
---
;; a reduce's accumulator is updated in place, never its initial value
(let [init {:a 1 "b" 2} r (reduce (fn [m x] (update m :a + x)) init [1 2 3])] [init r])
;=> [{:a 1 "b" 2} {:a 7 "b" 2}]
---
;; flex keys: :b updates "b" in place and keeps its spelling
(reduce (fn [m x] (update m :b (fnil inc 0))) {"b" 1} [1 2])
;=> {"b" 3}
---
;; maps built in place stay immutable once the reduce returns
(let [m (reduce (fn [m i] (assoc m i (* i i))) {} (range 100)) m2 (assoc m 5 :x) m3 (dissoc m 7)]
  [(get m 5) (get m2 5) (count m) (count m3) (get m 7) (count (reduce (fn [m i] (assoc m i i)) m2 (range 100 200)))])
;=> [25 :x 100 99 49 200]
---
;; loop bindings that share a name with a later pattern keep their binders
(loop [xs [1 2 3] [xs] [[9]] n 0] (if (< n 2) (recur [4 5] [[n]] (inc n)) [xs n]))
;=> [[1] 2]
---
(loop [x 1 x (inc x) i 0] (if (< i 2) (recur 10 (+ x 100) (inc i)) x))
;=> 202
---
;; a cursor inside a collection literal escapes too
(loop [rs [1 2 3] seen []] (if (empty? rs) seen (recur (rest rs) (conj seen {:at [rs]}))))
;=> [{:at [[1 2 3]]} {:at [[2 3]]} {:at [[3]]}]
---
;; reads inside literals are fine
(loop [rs [1 2 3] out #{}] (if (empty? rs) out (recur (rest rs) (conj out {:x (first rs) :n (count rs)}))))
;=> #{{:n 1 :x 3} {:n 2 :x 2} {:n 3 :x 1}}
---
;; loops shaped (if test exit (recur ...)) run as a Go loop (loopIf)
(loop [i 0 acc []] (if (< i 3) (recur (inc i) (conj acc i)) acc))
;=> [0 1 2]
---
(loop [i 0] (if-not (< i 5) i (recur (inc i))))
;=> 5
---
(loop [i 0] (if-not (>= i 5) (recur (inc i)) i))
;=> 5
---
;; the exit branch may recur too
(loop [i 0 n 0] (if (< i 10) (recur (inc i) (+ n i)) (if (< n 100) (recur 0 n) n)))
;=> 135
---
(loop [i 0] (if (< i "x") (recur (inc i)) i))
;;; "type_error: 1:17: <: expected number, got string \"x\" \\(arg 2\\)"
---
;; compile errors come in source order
(loop [i 0] (if (< i 1) (recur (foo i)) (bar i)))
;;; "undefined symbol: foo"
---
(loop [i 0] (if (< i 1) (bar i) (recur (foo i))))
;;; "undefined symbol: bar"
---
;; @looplimit 5
(loop [i 0] (if (< i 100) (recur (inc i)) i))
;;; "loop_limit"
---
;; a closure made in the loop keeps its iteration's values
(loop [i 0 fs []] (if (< i 3) (recur (inc i) (conj fs (fn [] i))) (mapv #(%) fs)))
;=> [0 1 2]
---
;; update compiled as a node: in place on a reduce's accumulator, the
;; builtin otherwise; the same errors either way
(reduce (fn [m x] (update m (mod x 3) (fnil + 0) x)) {} (range 10))
;=> {0 18 1 12 2 15}
---
(reduce (fn [m x] (update m :n inc)) {:n 0} (range 4))
;=> {:n 4}
---
(reduce (fn [m x] (update m :n + "a")) {:n 0} [1])
;;; "type_error: 1:19: \\+: expected number, got string \"a\" \\(arg 2\\)"
---
(reduce (fn [m x] (update m :n 5 x)) {:n 0} [1])
;;; "not callable: 5"
---
(update [1 2] 0 + 10)
;=> [11 2]
---
(update nil :a (fnil inc 0))
;=> {:a 1}
---
((fnil + 0) nil "x")
;;; "type_error: 1:1: \\+: expected number, got string \"x\" \\(arg 2\\)"
