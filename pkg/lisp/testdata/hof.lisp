;; builtins_hof.go: higher-order and misc
[((partial + 1 2) 3) ((partial str "a") "b" "c") ((partial +)) (map (partial * 2) [1 2 3])]
;=> [6 "abc" 0 [2 4 6]]
---
(partial)
;;; "arity_error: 1:1: partial expects 1 or more args, got 0"
---
;; comp applies right to left; the rightmost fn takes all args
[((comp inc inc) 1) ((comp) 5) ((comp str +) 1 2) ((comp :name #(get % 0)) [{:name "a"}]) (map (comp inc :n) [{:n 1} {:n 2}])]
;=> [3 5 "3" "a" [2 3]]
---
((comp) 1 2)
;;; "arity_error: 1:1: comp expects 1 arg, got 2"
---
[((complement even?) 3) ((complement nil?) nil) (filter (complement :done) [{:done true} {:done false}])]
;=> [true false [{:done false}]]
---
[((constantly 7)) ((constantly 7) 1 2 3) (map (constantly nil) [1 2])]
;=> [7 7 [nil nil]]
---
;; some-fn returns the first truthy result, else the last falsy one
[((some-fn even? neg?) 1 -3) ((some-fn even?) 1) ((some-fn :a :b) {:b 2}) ((some-fn :a) {}) ((some-fn even?))]
;=> [true false 2 nil nil]
---
[((every-pred pos? even?) 2 4) ((every-pred pos? even?) 2 3) ((every-pred even?)) (filter (every-pred :active :admin) [{:active true :admin true} {:active true}])]
;=> [true false true [{:active true :admin true}]]
---
;; keep drops nil results (false is kept)
[(keep #(if (even? %) (* % 10)) [1 2 3 4]) (keep :a [{:a 1} {:b 2} {:a false}]) (keep identity nil) (keep-indexed #(if (odd? %1) %2) [:a :b :c :d])]
;=> [[20 40] [1 false] [] [:b :d]]
---
;; keep on an infinite sequence stays lazy
(reduce (fn [acc x] (if (>= x 4) (reduced (+ acc x)) (+ acc x))) 0 (keep #(if (even? %) %) (range)))
;=> 6
---
(keep inc 5)
;;; "type_error: 1:1: keep: expected a collection, got 5 \\(arg 2\\)"
---
[(zipmap [:a :b :c] [1 2]) (zipmap [:a :a] [1 2]) (zipmap nil nil) (zipmap ["x" "y"] (range)) (zipmap (range) [:a :b]) (zipmap (iterate inc 5) "ab")]
;=> [{:a 1 :b 2} {:a 2} {} {"x" 0 "y" 1} {0 :a 1 :b} {5 "a" 6 "b"}]
---
[(not-every? even? [2 4]) (not-every? even? [2 3]) (not-every? even? []) (not-every? :ok [{:ok true}])]
;=> [false true false false]
---
[(subvec [1 2 3 4] 1 3) (subvec [1 2 3] 1) (subvec [1 2 3] 3) (subvec [1 2 3] 0 0)]
;=> [[2 3] [2 3] [] []]
---
(subvec [1 2 3] 2 5)
;;; "value_error: 1:1: subvec: indexes 2..5 out of bounds for vector of 3 items"
---
(subvec "abc" 1)
;;; "type_error: 1:1: subvec: expected vector, got string \"abc\" \\(arg 1\\)"
---
[(split-at 2 [1 2 3 4 5]) (split-at -1 [1 2]) (split-at 5 [1 2]) (split-at 1 nil) (split-at 2 "abc")]
;=> [[[1 2] [3 4 5]] [[] [1 2]] [[1 2] []] [[] []] [["a" "b"] ["c"]]]
---
[(split-with odd? [1 3 4 5]) (split-with odd? nil) (split-with pos? [1 2])]
;=> [[[1 3] [4 5]] [[] []] [[1 2] []]]
---
[(get (split-at 2 (range)) 0) (reduce (fn [a x] (if (> x 4) (reduced a) (+ a x))) 0 (get (split-with #(< % 3) (range)) 1))]
;=> [[0 1] 7]
---
[(partition-by odd? [1 3 2 4 5]) (partition-by odd? nil) (partition-by :t [{:t 1} {:t 1} {:t 2}]) (partition-by identity "aabc")]
;=> [[[1 3] [2 4] [5]] [] [[{:t 1} {:t 1}] [{:t 2}]] [["a" "a"] ["b"] ["c"]]]
---
;; dedupe removes consecutive duplicates only; (= 1 1.0)
[(dedupe [1 1 2 2 1]) (dedupe nil) (dedupe [1 1.0 2]) (dedupe "aab")]
;=> [[1 2 1] [] [1 2] ["a" "b"]]
---
[(merge-with + {:a 1 :b 2} {:a 10 :c 3} nil) (merge-with +) (merge-with + nil) (merge-with str {:a 1} {:a 2} {:a 3})]
;=> [{:a 11 :b 2 :c 3} nil nil {:a "123"}]
---
(merge-with + {:a 1} [1 2])
;;; "type_error: 1:1: merge-with: expected map, got vector \\[1 2\\] \\(arg 3\\)"
---
;; merge-with on string-keyed host maps: keys are flex
;; @ctx {"a": {"n": 1, "m": 2}}
(merge-with + ctx/a {:n 10})
;=> {"m" 2 "n" 11}
---
[(update-keys {:a 1 :b 2} name) (update-keys nil name) (update-keys {"x" 1} keyword)]
;=> [{"a" 1 "b" 2} {} {:x 1}]
---
(update-keys #{1} name)
;;; "type_error: 1:1: update-keys: expected map, got set #\\{1\\} \\(arg 1\\)"
---
[(reduce-kv (fn [acc k v] (+ acc v)) 0 {:a 1 :b 2}) (reduce-kv (fn [acc i v] (str acc i (name v))) "" [:x :y]) (reduce-kv + 0 nil) (reduce-kv (fn [acc k v] (if (> v 1) (reduced k) acc)) nil {:a 1 :b 2 :c 3})]
;=> [3 "0x1y" 0 :b]
---
(reduce-kv + 0 "ab")
;;; "type_error: 1:1: reduce-kv: expected a map or vector, got string \"ab\" \\(arg 3\\)"
---
[(hash-map :a 1 :b 2) (hash-map) (hash-map :a 1 :a 2) (array-map "k" nil)]
;=> [{:a 1 :b 2} {} {:a 2} {"k" nil}]
---
(hash-map :a)
;;; "arity_error: 1:1: hash-map expects an even number of args, got 1"
---
[(list 1 2 3) (list) (vector? (list 1))]
;=> [[1 2 3] [] true]
---
[(empty [1]) (empty {:a 1}) (empty #{1}) (empty "abc") (empty nil) (empty (range))]
;=> [[] {} #{} nil nil []]
---
[(peek [1 2 3]) (peek []) (peek nil) (pop [1 2 3]) (pop [1]) (pop nil)]
;=> [3 nil nil [1 2] [] nil]
---
(pop [])
;;; "value_error: 1:1: pop: can't pop an empty vector"
---
(peek {:a 1})
;;; "type_error: 1:1: peek: expected vector, got map \\{:a 1\\} \\(arg 1\\)"
---
[(disj #{1 2 3} 2 3) (disj #{1} 5) (disj nil 1) (disj #{1 2})]
;=> [#{1} #{1} nil #{1 2}]
---
(disj [1 2] 1)
;;; "type_error: 1:1: disj: expected set, got vector \\[1 2\\] \\(arg 1\\)"
---
[(int? 1) (int? 1.0) (float? 1.0) (float? 1) (true? true) (true? 1) (false? false) (false? nil)]
;=> [true false true false true false true false]
---
[(fn? inc) (fn? (fn [] 1)) (fn? #(do %)) (fn? :a) (fn? {}) (ifn? :a) (ifn? {}) (ifn? 1) (fn? (partial +))]
;=> [true true true false false true true false true]
---
;; trampoline: mutual recursion deeper than the call stack allows; a
;; keyword or map returned is a value
(letfn [(ev? [n] (if (zero? n) true #(od? (dec n))))
        (od? [n] (if (zero? n) false #(ev? (dec n))))]
  [(trampoline ev? 100001) (trampoline + 1 2) (trampoline (fn [] (fn [] :k))) (trampoline (fn [] {:a 1}))])
;=> [false 3 :k {:a 1}]
---
(trampoline 5)
;;; "not_callable: 1:1: not callable: 5"
---
;; memoize: f runs once for each distinct argument list, with no
;; argument too, and a function among the arguments is part of the key
(let [f (memoize (fn [x y] (println "called" x y) (+ x y)))
      g (memoize (fn [] (println "g") :v))
      fib (memoize (fn [fib n] (if (< n 2) n (+ (fib fib (- n 1)) (fib fib (- n 2))))))]
  [(f 1 2) (f 1 2) (f 2 1) (f 1 2) (g) (g) ((memoize +)) (fib fib 80)])
;=> [3 3 3 3 :v :v 0 23416728348467685]
;; @prints "called 1 2"
;; @prints "called 2 1"
;; @prints "g"
---
(memoize)
;;; "arity_error: .*memoize expects 1 arg, got 0"
---
;; pmap branches share one memoized function
(let [f (memoize (fn [x] (* x 10)))]
  [(pmap f [1 2 1 2 3 1]) (f 3)])
;=> [[10 20 10 20 30 10] 30]
---
;; errors inside returned fns name the function called
((partial inc 1) 2)
;;; "arity_error: 2:1: inc expects 1 arg, got 2"
---
;; keep-indexed, partition-by and dedupe stay lazy on infinite input
[(get (split-at 3 (keep-indexed #(when (even? %1) %2) (iterate inc 10))) 0) (get (split-at 3 (partition-by #(quot % 3) (range))) 0) (get (split-at 4 (dedupe (cycle [1 1 2]))) 0)]
;=> [[10 12 14] [[0 1 2] [3 4 5] [6 7 8]] [1 2 1 2]]
---
;; comparator: a 3-way comparator from a "before" predicate
[((comparator <) 1 2) ((comparator <) 2 1) ((comparator <) 1 1) (sort (comparator >) [3 1 2]) (sort-by :n (comparator <) [{:n 2} {:n 1}])]
;=> [-1 1 0 [3 2 1] [{:n 1} {:n 2}]]
---
;; no ratios or BigDecimals
[(decimal? 1.5) (decimal? 1) (ratio? 1) (ratio? 0.5) (ratio? (/ 1 3))]
;=> [false false false false false]
