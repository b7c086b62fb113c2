;; get-in: default only when a key is absent (not for a found nil)
(get-in {:a {:b 1}} [:a :b])
;=> 1
---
(get-in {:a {:b 1}} [:a :c])
;=> nil
---
(get-in {:a {:b 1}} [:a :c] :d)
;=> :d
---
(get-in {:a nil} [:a] :d)
;=> nil
---
(get-in {:a nil} [:a :b] 5)
;=> 5
---
(get-in {:a 1} [] 5)
;=> {:a 1}
---
(get-in {:a 1} nil)
;=> {:a 1}
---
(get-in {:a [10 {:b 2}]} [:a 1 :b])
;=> 2
---
(get-in nil [:a])
;=> nil
---
(get-in {:s "abc"} [:s 1])
;=> "b"
---
;; @ctx {"user": {"address": {"city": "Oslo"}}}
[(get-in ctx/user [:address :city]) (get-in ctx/user ["address" :city]) (get-in ctx/user [:address :zip] "none")]
;=> ["Oslo" "Oslo" "none"]
---
(get-in {:a 1} :a)
;;; "type_error: .*get-in: expected a collection, got keyword :a \\(arg 2\\)"
---
;; assoc: maps, vectors (index ≤ len), nil → new map
(assoc {:a 1} :b 2)
;=> {:a 1 :b 2}
---
(assoc {:a 1} :a 2 :c 3)
;=> {:a 2 :c 3}
---
(assoc nil :a 1)
;=> {:a 1}
---
(assoc [1 2] 0 :x)
;=> [:x 2]
---
(assoc [1 2] 2 3)
;=> [1 2 3]
---
(assoc [1 2] 3 3)
;;; "value_error: .*assoc: index 3 out of bounds for vector of 2 items"
---
(assoc [1 2] :a 3)
;;; "type_error: .*assoc: expected an integer index for a vector, got keyword :a"
---
(assoc {} :a)
;;; "arity_error: .*assoc expects"
---
(assoc {} :a 1 :b)
;;; "arity_error: .*assoc expects 3, 5, 7 ... args"
---
(assoc "s" 0 1)
;;; "type_error: .*assoc: expected a map or vector, got string"
---
;; @ctx {"m": {"n": 1}}
(assoc ctx/m :n 2)
;=> {"n" 2}
---
(let [m {:a 1} m2 (assoc m :b 2)] [m m2])
;=> [{:a 1} {:a 1 :b 2}]
---
(count (reduce (fn [m i] (assoc m i (* i i))) {} (range 1000)))
;=> 1000
---
;; assoc-in, update, update-in: missing levels become maps
(assoc-in {} [:a :b] 1)
;=> {:a {:b 1}}
---
(assoc-in {:a {:c 2}} [:a :b] 1)
;=> {:a {:b 1 :c 2}}
---
(assoc-in nil [:a] 1)
;=> {:a 1}
---
(assoc-in {:a [1 2]} [:a 0] :x)
;=> {:a [:x 2]}
---
(assoc-in {} [] 1)
;=> {nil 1}
---
;; @ctx {"u": {"address": {"zip": 1}}}
(assoc-in ctx/u [:address :zip] 2)
;=> {"address" {"zip" 2}}
---
(assoc-in {:a 1} [:a :b] 2)
;;; "type_error: .*assoc-in: expected a map or vector, got 1"
---
(update {:n 1} :n inc)
;=> {:n 2}
---
(update {:n 1} :n + 10 100)
;=> {:n 111}
---
(update {:n 1} :n - 1)
;=> {:n 0}
---
(update {} :n (fnil inc 0))
;=> {:n 1}
---
(update {} :n inc)
;;; "type_error: .*inc: expected number, got nil"
---
(update [1 2] 0 inc)
;=> [2 2]
---
(update nil :a (fnil conj []) 1)
;=> {:a [1]}
---
;; @ctx {"m": {"n": 1}}
(update ctx/m :n inc)
;=> {"n" 2}
---
(update-in {:a {:b 1}} [:a :b] inc)
;=> {:a {:b 2}}
---
(update-in {} [:a :b] (fnil inc 0))
;=> {:a {:b 1}}
---
(update-in {:a {:b 1}} [:a :b] + 2 3)
;=> {:a {:b 6}}
---
(update-in {:a [{:n 1}]} [:a 0 :n] inc)
;=> {:a [{:n 2}]}
---
;; @ctx {"u": {"address": {"zip": 10}}}
(update-in ctx/u [:address :zip] inc)
;=> {"address" {"zip" 11}}
---
(reduce (fn [m r] (update m (:category r) (fnil + 0) (:qty r))) {} [{:category "a" :qty 1} {:category "b" :qty 2} {:category "a" :qty 3}])
;=> {"a" 4 "b" 2}
---
;; dissoc, merge
(dissoc {:a 1 :b 2} :a)
;=> {:b 2}
---
(dissoc {:a 1 :b 2} :a :b :c)
;=> {}
---
(dissoc {:a 1})
;=> {:a 1}
---
(dissoc nil :a)
;=> nil
---
;; @ctx {"m": {"id": 1, "x": 2}}
(dissoc ctx/m :id)
;=> {"x" 2}
---
(dissoc [1 2] 0)
;;; "type_error: .*dissoc: expected a map, got vector"
---
(merge {:a 1 :b 2} {:b 3} nil {:c 4})
;=> {:a 1 :b 3 :c 4}
---
(merge)
;=> nil
---
(merge nil nil)
;=> nil
---
(merge nil {:a 1})
;=> {:a 1}
---
(merge {:a 1} [:b 2])
;=> {:a 1 :b 2}
---
;; @ctx {"m": {"n": 1}}
(merge ctx/m {:n 2 :o 3})
;=> {:o 3 "n" 2}
---
(merge {:a 1} 5)
;;; "type_error: .*merge: expected a \\[key value\\] entry or a map, got 5 \\(arg 2\\)"
---
;; select-keys keeps the requested spelling; a present nil is kept
(select-keys {:a 1 :b 2 :c 3} [:a :c :z])
;=> {:a 1 :c 3}
---
(select-keys {:a nil :b 2} [:a :c])
;=> {:a nil}
---
(select-keys nil [:a])
;=> {}
---
;; host keys keep their spelling: flex lookup finds "id" for :id
;; @ctx {"m": {"id": 1, "name": "x", "secret": 2}}
(select-keys ctx/m [:id :name])
;=> {"id" 1 "name" "x"}
---
(select-keys {:a 1} :a)
;;; "type_error: .*select-keys: expected a collection, got keyword :a \\(arg 2\\)"
---
(select-keys 5 [:a])
;;; "type_error: .*select-keys: expected a map, got 5"
---
;; keys vals entries key val
(keys {:b 2 :a 1})
;=> [:a :b]
---
(vals {:b 2 :a 1})
;=> [1 2]
---
(keys {})
;=> nil
---
(vals nil)
;=> nil
---
(keys {1 :x :a :y "s" :z})
;=> [1 :a "s"]
---
(keys (sort-by val {:a 2 :b 1}))
;=> [:b :a]
---
(keys [1 2])
;;; "type_error: .*keys: expected a map entry \\[key value\\], got 1"
---
(keys 5)
;;; "type_error: .*keys: expected a map, got 5"
---
(entries {:b 2 :a 1})
;=> [[:a 1] [:b 2]]
---
(entries {})
;=> []
---
(entries nil)
;=> []
---
(entries [1])
;;; "type_error: .*entries: expected a map"
---
(map key {:a 1 :b 2})
;=> [:a :b]
---
(map val {:a 1 :b 2})
;=> [1 2]
---
(key [:a 1])
;=> :a
---
(key 5)
;;; "type_error: .*key: expected a map entry \\[key value\\], got 5"
---
(into {} (filter (fn [[k v]] (> v 1)) {:a 1 :b 2 :c 3}))
;=> {:b 2 :c 3}
---
;; update-vals fnil
(update-vals {:a 1 :b 2} inc)
;=> {:a 2 :b 3}
---
(update-vals nil inc)
;=> {}
---
(update-vals #{1} inc)
;;; "type_error: .*update-vals: expected a map, got set"
---
((fnil + 0) nil 5)
;=> 5
---
((fnil + 0 10) nil nil)
;=> 10
---
((fnil + 0) 1 2 3 4 5)
;=> 15
---
((fnil str "a" "b" "c") nil nil nil nil "e")
;=> "abce"
---
((fnil inc 0) 5)
;=> 6
---
(map (fnil inc 0) [1 nil 3])
;=> [2 1 4]
---
(let [v [1 2]]
  (update v 5 (fn [x] x)))
;;; "value_error: 2:3: update: index 5 out of bounds for vector of 2 items"
---
(sorted-map :b 1 :a 2 :c 3)
;=> {:a 2 :b 1 :c 3}
---
(into (sorted-map) {:z 1 :y 2})
;=> {:y 2 :z 1}
---
(sorted-map :a)
;;; "arity_error: .*sorted-map expects an even number of args"
---
;; fnil's result called through the fixed-arity entries (map, reduce, update)
(reduce (fnil + 0) [nil 1 2])
;=> 3
---
(map (fnil (fn [a] (* 2 a)) 4) [nil 1])
;=> [8 2]
---
(reduce (fnil (fn [a] a) 0) [nil 1 2])
;;; "arity_error: 1:1: fn expects 1 arg, got 2"
---
;; sorted-map-by takes any comparator: it orders the keys and decides
;; which keys are equal (expected values from Clojure 1.11)
[(sorted-map-by < 2 :b 1 :a) (sorted-map-by compare "b" 1 "a" 2) (into (sorted-map-by <=) {3 1 1 2}) (sorted-map-by (comparator <) 2 :b 1 :a)]
;=> [{1 :a 2 :b} {"a" 2 "b" 1} {1 2 3 1} {1 :a 2 :b}]
---
[(sorted-map-by > 1 :a 2 :b) (sorted-map-by (fn [a b] (< b a)) 1 :a 2 :b) (sorted-map-by > 1 :a 1 :b) (sorted-map-by >)]
;=> [{2 :b 1 :a} {2 :b 1 :a} {1 :b} {}]
---
;; assoc, dissoc, conj, into, merge, update, assoc-in and empty keep the comparator
(let [m (sorted-map-by > 1 :a 3 :c)]
  [(assoc m 2 :b) (dissoc (assoc m 2 :b) 3) (conj m [2 :b] [4 :d]) (into (sorted-map-by >) {1 :a 3 :c 2 :b})
   (merge m {2 :b} {4 :d}) (merge (sorted-map-by >) {3 :c} {1 :a}) (update (sorted-map-by > 1 1 2 2) 1 inc)
   (assoc-in (sorted-map-by > 1 {} 2 {}) [1 :x] 5) (assoc (empty m) 1 :x 2 :y)])
;=> [{3 :c 2 :b 1 :a} {2 :b 1 :a} {4 :d 3 :c 2 :b 1 :a} {3 :c 2 :b 1 :a} {4 :d 3 :c 2 :b 1 :a} {3 :c 1 :a} {2 2 1 2} {2 {} 1 {:x 5}} {2 :y 1 :x}]
---
;; seq, keys, vals, first, last, reduce, into [], printing follow the comparator
(let [m (sorted-map-by > 1 :a 2 :b 3 :c)]
  [(seq m) (keys m) (vals m) (first m) (last m) (reduce (fn [acc [k v]] (conj acc k)) [] m) (into [] m) (pr-str m) (str (sorted-map-by > 1 :a 2 :b))])
;=> [[[3 :c] [2 :b] [1 :a]] [3 2 1] [:c :b :a] [3 :c] [1 :a] [3 2 1] [[3 :c] [2 :b] [1 :a]] "{3 :c 2 :b 1 :a}" "{2 :b 1 :a}"]
---
;; a reduce or loop building the map in place keeps the comparator
[(reduce (fn [m x] (assoc m x (* x x))) (sorted-map-by >) [1 3 2])
 (loop [m (sorted-map-by >) xs [1 3 2]] (if (seq xs) (recur (assoc m (first xs) 0) (rest xs)) m))]
;=> [{3 9 2 4 1 1} {3 0 2 0 1 0}]
---
;; equality and hashing ignore the order
[(= (sorted-map-by > 1 :a) {1 :a}) (= #{(sorted-map-by > 1 :a 2 :b)} #{{2 :b 1 :a}}) (sorted? (sorted-map-by >))]
;=> [true true true]
---
;; two keys the comparator calls equal are one key: the first key, the last value
(let [by-count #(compare (count %1) (count %2))]
  [(assoc (sorted-map-by by-count "bb" 1 "a" 2) "dd" 3) (sorted-map-by by-count "bb" 1 "dd" 2)
   (dissoc (sorted-map-by by-count "bb" 1 "a" 2) "dd")])
;=> [{"a" 2 "bb" 3} {"bb" 2} {"a" 2}]
---
(let [m (sorted-map-by > 1 :a 2 :b 3 :c)] [(subseq m <= 2) (rsubseq m <= 2) (subseq m > 2)])
;=> [[[3 :c] [2 :b]] [[2 :b] [3 :c]] [[1 :a]]]
---
(sorted-map-by > :a 1 :b 2)
;;; ">: expected number, got keyword :b \\(as the sorted-map-by comparator\\)"
---
(sorted-map-by (fn [a b] "x") 1 :a 2 :b)
;;; "sorted-map-by"
---
(sorted-map-by (fn [a b] (throw (ex-info "boom" {}))) 1 :a 2 :b)
;;; "boom"
---
(sorted-map-by :a 1 :a 2 :b)
;;; "sorted-map-by: expected a comparator function, got keyword :a \\(arg 1\\)"
---
(assoc (sorted-map-by compare 1 :a) :x 2)
;;; "sorted-map-by: cannot compare 1 with keyword :x"
---
(sorted-map-by < 1)
;;; "arity_error"
---
;; subseq / rsubseq over the key order of a map or set
[(subseq (sorted-map 1 :a 2 :b 3 :c) > 1) (subseq (sorted-set 1 2 3 4 5) >= 2 < 5) (rsubseq (sorted-set 1 2 3 4 5) >= 2 < 5) (rsubseq (sorted-set 1 2 3 4 5) < 3) (subseq (sorted-set 1 2 3) > 5) (subseq (sorted-map "a" 1 "b" 2 "c" 3) >= "b")]
;=> [[[2 :b] [3 :c]] [2 3 4] [4 3 2] [2 1] nil [["b" 2] ["c" 3]]]
---
(subseq (sorted-set 1 2) > "a")
;;; "subseq: cannot compare 1 with string"
---
(subseq (sorted-set 1 2) > 1 <)
;;; "arity_error"
---
(subseq [1 2] > 1)
;;; "subseq: expected a sorted map or set"
---
;; a key that shares structure (each holds the map before it twice) is
;; ordered by a bounded print: this ends at once, not at the timeout
(let [m (zipmap (range 10) (range 10))] (count (reduce (fn [acc x] (assoc m [acc x] [acc x])) m (range 60))))
;=> 11
---
;; rseq takes any map or set (every one is sorted)
[(rseq (sorted-map-by > 1 :a 2 :b)) (rseq (sorted-set-by > 1 2 3)) (rseq (sorted-map 1 :a 2 :b)) (rseq (sorted-set-by >))]
;=> [[[1 :a] [2 :b]] [1 2 3] [[2 :b] [1 :a]] nil]
---
(rseq "ab")
;;; "rseq: expected a vector or a sorted collection, got string"
---
;; an error in the comparator names the constructor
(sorted-map-by (fn [a b] (quot a 0)) 1 :a 2 :b)
;;; "arithmetic_error: 2:26: sorted-map-by: the comparator failed: division by zero"
---
(conj (sorted-set-by (fn [a b] (compare (count a) (count b))) "a") 1)
;;; "sorted-set-by: the comparator failed: count"
---
(sorted-map-by (fn [a b] nil) 1 :a 2 :b)
;=> {1 :b}
---
;; lookups find a key by =, not by the comparator (documented difference)
(let [s (sorted-set-by #(compare (count %1) (count %2)) "bb" "a")] [(get s "dd") (contains? s "dd") (contains? s "bb") (get s "a")])
;=> [nil false true "a"]
---
;; keys equal by = are one key even when the comparator orders them apart (documented difference)
[(sorted-set-by <= 2 1 2) (sorted-map-by <= 2 :a 1 :b 2 :c)]
;=> [#{1 2} {1 :b 2 :c}]
---
;; pmap's workers share a sorted-map-by: each adds to it, none changes it
(let [m (sorted-map-by > 1 :a 3 :c)] [(pmap (fn [x] (keys (assoc m x 0))) [2 4 0]) m])
;=> [[[3 2 1] [4 3 1] [3 1 0]] {3 :c 1 :a}]
---
;; an operation that cannot keep the comparator gives an ordinary map
[(select-keys (sorted-map-by > 1 :a 2 :b 3 :c) [1 3]) (update-vals (sorted-map-by > 1 1 2 2) inc)]
;=> [{1 :a 3 :c} {1 2 2 3}]
---
;; a thousand keys: inserts, removals and lookups across the order's chunks
(let [xs (map #(mod (* % 7919) 1009) (range 1000))
      m (reduce (fn [m x] (assoc m x (* 2 x))) (sorted-map-by >) xs)
      m2 (reduce dissoc m (filter even? xs))
      s (into (sorted-set-by (fn [a b] (compare (str b) (str a)))) xs)
      s2 (apply disj s (range 0 1009 3))]
  [(count m) (= (keys m) (sort > (distinct xs))) (vec (take 3 m2)) (count m2)
   (= (vals m2) (map #(* 2 %) (sort > (filter odd? (distinct xs)))))
   (first (subseq m2 < 500)) (vec (take 4 s)) (count s2) (vec (take 4 s2)) (vec (take-last 3 s2))
   (vec (take 5 (rsubseq s2 > "995"))) (count (rsubseq s2 > "995"))])
;=> [1000 true [[1007 2014] [1005 2010] [1003 2006]] 500 true [1007 2014] [999 998 997 996] 669 [998 997 995 994] [100 10 1] [1 10 100 1000 1001] 666]
---
;; merge-with onto a string cannot assoc, as in Clojure
(merge-with + "ab" {0 1})
;;; "type_error: .*merge-with: expected map, got string \"ab\" \\(arg 2\\)"
