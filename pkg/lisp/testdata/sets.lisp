;; set set? union intersection difference (also clojure.set/ and set/)
(set [1 2 1])
;=> #{1 2}
---
(set nil)
;=> #{}
---
(set "aba")
;=> #{"a" "b"}
---
(set {:a 1})
;=> #{[:a 1]}
---
(set [1 1.0])
;=> #{1}
---
(set (range 3))
;=> #{0 1 2}
---
(set 5)
;;; "type_error: .*set: expected a set, got 5 \\(arg 1\\)"
---
[(set? #{}) (set? [1]) (set? nil)]
;=> [true false false]
---
(union #{1 2} #{2 3})
;=> #{1 2 3}
---
(union)
;=> #{}
---
(union #{1})
;=> #{1}
---
(clojure.set/union #{1} #{2} #{3})
;=> #{1 2 3}
---
(set/union #{1} nil)
;=> #{1}
---
(union #{1} [2 3])
;=> #{1 2 3}
---
(union #{1} 2)
;;; "type_error: .*union: expected a set, got 2 \\(arg 2\\)"
---
(intersection #{1 2 3} #{2 3 4})
;=> #{2 3}
---
(clojure.set/intersection #{1 2} #{2 3} #{2})
;=> #{2}
---
(intersection #{1 2} #{})
;=> #{}
---
(intersection #{1 2})
;=> #{1 2}
---
(set/intersection (set ["books" "toys"]) #{"books" "cars"})
;=> #{"books"}
---
(intersection)
;;; "arity_error: .*intersection expects 1 or more args, got 0"
---
(difference #{1 2 3} #{2})
;=> #{1 3}
---
(difference #{1 2 3} #{2} #{3 4})
;=> #{1}
---
(difference #{1 2} #{1 2 3 4 5})
;=> #{}
---
(clojure.set/difference #{1 2})
;=> #{1 2}
---
;; as Clojure, nothing is removed from nil
(difference nil #{1})
;=> nil
---
[(subset? #{1} #{1 2}) (subset? #{1 3} #{1 2}) (superset? #{1 2} #{2}) (set/subset? #{} #{})]
;=> [true false true true]
---
(set/select odd? #{1 2 3})
;=> #{1 3}
---
(set/project [{:a 1 :b 2} {:a 1 :b 3}] [:a])
;=> #{{:a 1}}
---
(set/rename-keys {:a 1 :b 2} {:a :x})
;=> {:b 2 :x 1}
---
(set/rename-keys {:a 1 :b 2} {:a :b :b :a})
;=> {:a 2 :b 1}
---
(set/map-invert {:a 1 :b 2})
;=> {1 :a 2 :b}
---
(set/index [{:t "x" :n 1} {:t "y" :n 2} {:t "x" :n 3}] [:t])
;=> {{:t "x"} #{{:n 1 :t "x"} {:n 3 :t "x"}} {:t "y"} #{{:n 2 :t "y"}}}
---
(set/join [{:id 1 :a "x"} {:id 2 :a "y"}] [{:id 1 :b "p"} {:id 3 :b "q"}])
;=> #{{:a "x" :b "p" :id 1}}
---
(set/join [{:uid 1 :a "x"}] [{:id 1 :b "p"}] {:uid :id})
;=> #{{:a "x" :b "p" :id 1 :uid 1}}
---
(set/join [] [{:id 1}])
;=> #{}
---
;; sets as predicates and in pipelines
(filter #{"a" "c"} ["a" "b" "c"])
;=> ["a" "c"]
---
(count (set (map :k (map (fn [i] {:k (mod i 7)}) (range 100)))))
;=> 7
---
(sorted-set 3 1 2 1)
;=> #{1 2 3}
---
(sorted-set)
;=> #{}
---
(let [s (set (range 50))] [(count s) (contains? s 49) (contains? s 49.0) (contains? s 50) (first s) (last s)])
;=> [50 true true false 0 49]
---
(let [s (into #{} (concat (range 20) (range 10) [:a "a" 1.0]))] [(count s) (contains? s :a) (contains? s "a")])
;=> [22 true true]
---
(let [s (set (map #(str "k" (mod % 30)) (range 300)))] [(count s) (s "k29") (s :k29)])
;=> [30 "k29" nil]
---
(count (union (set (range 100)) (set (range 50 150))))
;=> 150
---
(intersection (set (range 0 100 2)) (set (range 0 100 3)) #{0 6 7})
;=> #{0 6}
---
[(hash-set 1 2 2 3) (hash-set) (contains? (hash-set :a) :a)]
;=> [#{1 2 3} #{} true]
---
;; set/rename: keys of every map renamed
[(clojure.set/rename #{{:a 1 :b 2}} {:a :x}) (set/rename [{:a 1 :b 2} {:a 3}] {:a :b :b :a})]
;=> [#{{:b 2 :x 1}} #{{:a 2 :b 1} {:b 3}}]
---
(set/rename [1] {:a :b})
;;; "rename: expected a collection of maps, got 1 \\(item 1\\)"
---
;; sorted-set-by takes any comparator: it orders the items and decides
;; which items are equal (expected values from Clojure 1.11)
[(sorted-set-by < 3 1 2) (sorted-set-by compare "b" "a") (sorted-set-by (comparator <) 2 1)]
;=> [#{1 2 3} #{"a" "b"} #{1 2}]
---
[(sorted-set-by > 3 1 2) (sorted-set-by #(compare %2 %1) 1 2) (sorted-set-by (comparator >) 1 3 2) (sorted-set-by >)]
;=> [#{3 2 1} #{2 1} #{3 2 1} #{}]
---
(let [by-count #(compare (count %1) (count %2))
      s (sorted-set-by by-count "bb" "a" "ccc")]
  [s (conj s "dd") (count (conj s "dd")) (disj s "dd") (sorted-set-by (fn [a b] (compare (mod a 3) (mod b 3))) 1 2 3 4 5 6)])
;=> [#{"a" "bb" "ccc"} #{"a" "bb" "ccc"} 3 #{"a" "ccc"} #{3 1 2}]
---
;; conj, disj, into, empty keep the comparator; seq functions follow it
(let [s (sorted-set-by > 1 3)]
  [(conj s 2) (disj (conj s 2) 2) (into (sorted-set-by >) [5 1 4 2]) (into (empty s) [3 1 2])
   (first (conj s 2)) (last (conj s 2)) (vec (conj s 2)) (map inc (conj s 2)) (pr-str (conj s 2))
   (= (sorted-set-by > 1 2) #{1 2})])
;=> [#{3 2 1} #{3 1} #{5 4 2 1} #{3 2 1} 3 1 [3 2 1] [4 3 2] "#{3 2 1}" true]
---
(let [s (sorted-set-by > 1 2 3 4 5)] [(subseq s > 3) (subseq s >= 4 <= 2) (rsubseq s > 3)])
;=> [[2 1] [4 3 2] [1 2]]
---
(sorted-set-by nil 1 2)
;;; "sorted-set-by: expected a comparator function, got nil"
