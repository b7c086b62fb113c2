;; find: (find pred coll), and Clojure's (find map key)
(find even? [1 3 4 6])
;=> 4
---
(find even? [1 3])
;=> nil
---
(find :admin [{:id 1} {:id 2 :admin true}])
;=> {:admin true :id 2}
---
(find even? (range 1 1000000000))
;=> 2
---
(find {:a 1 :b 2} :b)
;=> [:b 2]
---
(find {:a 1} :z)
;=> nil
---
;; @ctx {"m": {"id": 7}}
(find ctx/m :id)
;=> ["id" 7]
---
(find even? 5)
;;; "type_error: .*find: expected a collection, got 5 \\(arg 2\\)"
---
;; mapcat, map-indexed, pluck
(mapcat reverse [[1 2] [3 4]])
;=> [2 1 4 3]
---
(mapcat (fn [x] [x x]) [1 2])
;=> [1 1 2 2]
---
(mapcat (fn [x] nil) [1 2])
;=> []
---
(mapcat vector [1 2] [:a :b :c])
;=> [1 :a 2 :b]
---
(take 5 (mapcat (fn [x] [x x]) (range)))
;=> [0 0 1 1 2]
---
(mapcat identity nil)
;=> []
---
(mapcat identity [1])
;;; "type_error: .*mapcat: expected a collection, got 1"
---
(map-indexed vector [:a :b])
;=> [[0 :a] [1 :b]]
---
(map-indexed (fn [i x] (* i x)) [5 5 5])
;=> [0 5 10]
---
(take 2 (map-indexed vector (range)))
;=> [[0 0] [1 1]]
---
(map-indexed vector nil)
;=> []
---
(pluck :name [{:name "a"} {:name "b"} {}])
;=> ["a" "b" nil]
---
(pluck [:u :n] [{:u {:n 1}} {:u nil}])
;=> [1 nil]
---
;; @ctx {"users": [{"name": "ann"}, {"name": "bob"}]}
[(pluck :name ctx/users) (pluck "name" ctx/users)]
;=> [["ann" "bob"] ["ann" "bob"]]
---
;; sort: stable, natural order, :asc/:desc, boolean and 3-way comparators
(sort [3 1 2])
;=> [1 2 3]
---
(sort [2 1.5 1])
;=> [1 1.5 2]
---
(sort ["b" "a" "C"])
;=> ["C" "a" "b"]
---
(sort [:b :a])
;=> [:a :b]
---
(sort [[2 1] [1 2] [1]])
;=> [[1] [1 2] [2 1]]
---
(sort [nil 2 1])
;=> [nil 1 2]
---
(sort > [3 1 2])
;=> [3 2 1]
---
(sort :desc [3 1 2])
;=> [3 2 1]
---
(sort :asc [3 1 2])
;=> [1 2 3]
---
(sort compare ["b" "a"])
;=> ["a" "b"]
---
(sort (fn [a b] (compare b a)) [1 3 2])
;=> [3 2 1]
---
(sort #(< (count %1) (count %2)) ["ccc" "a" "bb" "d"])
;=> ["a" "d" "bb" "ccc"]
---
(sort nil)
;=> []
---
(sort #{3 1})
;=> [1 3]
---
(sort {:b 1 :a 2})
;=> [[:a 2] [:b 1]]
---
(sort [3 "a"])
;;; "type_error: .*sort: cannot compare (string \"a\"|3) with (3|string \"a\")"
---
(sort > [1 "a"])
;;; "type_error: .*>: expected number, got string"
---
(sort :up [1])
;;; "value_error: .*sort: unknown order :up"
---
(sort (fn [a b] "x") [1 2])
;;; "type_error: .*sort: comparator must return a boolean or a number"
---
(sort 5)
;;; "type_error: .*sort: expected a collection, got 5"
---
;; sort-by
(sort-by :a [{:a 2} {:a nil} {:a 1}])
;=> [{:a nil} {:a 1} {:a 2}]
---
(sort-by :p > [{:p 1 :id 1} {:p 3 :id 2} {:p 1 :id 3} {:p 2 :id 4}])
;=> [{:id 2 :p 3} {:id 4 :p 2} {:id 1 :p 1} {:id 3 :p 1}]
---
(sort-by :p :desc [{:p 1.5} {:p 3} {:p 2}])
;=> [{:p 3} {:p 2} {:p 1.5}]
---
(sort-by :p [{:p 2} {:p 1.0} {:p 1}])
;=> [{:p 1.0} {:p 1} {:p 2}]
---
(sort-by count ["ccc" "a" "bb"])
;=> ["a" "bb" "ccc"]
---
(sort-by count > ["a" "ccc" "bb"])
;=> ["ccc" "bb" "a"]
---
(sort-by :name [{:name "bob"} {:name "al"}])
;=> [{:name "al"} {:name "bob"}]
---
(sort-by :name :desc [{:name "bob"} {:name "al"} {:name "cy"}])
;=> [{:name "cy"} {:name "bob"} {:name "al"}]
---
(sort-by [:u :age] [{:u {:age 3}} {:u {:age 1}}])
;=> [{:u {:age 1}} {:u {:age 3}}]
---
(sort-by (juxt :a :b) [{:a 1 :b 2} {:a 0 :b 5} {:a 1 :b 1}])
;=> [{:a 0 :b 5} {:a 1 :b 1} {:a 1 :b 2}]
---
(sort-by val {:a 3 :b 1 :c 2})
;=> [[:b 1] [:c 2] [:a 3]]
---
(sort-by first > {:a 3 :b 1})
;;; "type_error: .*>: expected number, got keyword"
---
(sort-by - [1 3 2])
;=> [3 2 1]
---
(sort-by :p compare [{:p "b"} {:p "a"}])
;=> [{:p "a"} {:p "b"}]
---
(sort-by :p > [{:p 2} {:p nil}])
;;; "type_error: .*>: expected number, got nil"
---
(sort-by :p [{:p 1} {:p "a"}])
;;; "type_error: .*sort-by: cannot compare"
---
;; @ctx {"rows": [{"price": 2.5, "id": 1}, {"price": 9, "id": 2}, {"price": 4, "id": 3}]}
(->> ctx/rows (sort-by :price >) (take 2) (map :id))
;=> [2 3]
---
(sort-by :a nil)
;=> []
---
;; reverse, rseq
(reverse [1 2 3])
;=> [3 2 1]
---
(reverse nil)
;=> []
---
(reverse "abc")
;=> ["c" "b" "a"]
---
(reverse {:a 1 :b 2})
;=> [[:b 2] [:a 1]]
---
(rseq [1 2])
;=> [2 1]
---
(rseq [])
;=> nil
---
(rseq "ab")
;;; "type_error: .*rseq: expected a vector"
---
;; distinct, distinct-by, distinct?
(distinct [1 2 1 3 2])
;=> [1 2 3]
---
(distinct [1 1.0 2])
;=> [1 2]
---
(distinct [:a "a" :a])
;=> [:a "a"]
---
(distinct [[1 2] [1 2] {:a 1} {:a 1}])
;=> [[1 2] {:a 1}]
---
(distinct nil)
;=> []
---
(distinct "abca")
;=> ["a" "b" "c"]
---
(distinct-by :id [{:id 1 :v 1} {:id 2} {:id 1 :v 2}])
;=> [{:id 1 :v 1} {:id 2}]
---
(distinct-by count ["a" "b" "cc"])
;=> ["a" "cc"]
---
(distinct? 1 2 3)
;=> true
---
(distinct? 1 2 1.0)
;=> false
---
;; group-by, frequencies
(group-by odd? [1 2 3])
;=> {false [2] true [1 3]}
---
(group-by :type [{:type "a" :n 1} {:type "b" :n 2} {:type "a" :n 3}])
;=> {"a" [{:n 1 :type "a"} {:n 3 :type "a"}] "b" [{:n 2 :type "b"}]}
---
(group-by :k [{:k :x} {:k "x"} {:k :x}])
;=> {:x [{:k :x} {:k :x}] "x" [{:k "x"}]}
---
(group-by :missing [{:a 1}])
;=> {nil [{:a 1}]}
---
(group-by count nil)
;=> {}
---
(group-by [:u :c] [{:u {:c 1}} {:u {:c 2}} {:u {:c 1}}])
;=> {1 [{:u {:c 1}} {:u {:c 1}}] 2 [{:u {:c 2}}]}
---
;; @ctx {"users": [{"role": "admin", "n": 1}, {"role": "user", "n": 2}, {"role": "user", "n": 3}]}
(update-vals (group-by :role ctx/users) count)
;=> {"admin" 1 "user" 2}
---
(frequencies [:a :b :a 1 1.0])
;=> {1 2 :a 2 :b 1}
---
(frequencies "abca")
;=> {"a" 2 "b" 1 "c" 1}
---
(frequencies nil)
;=> {}
---
(frequencies (map :k [{:k "x"} {:k :x}]))
;=> {:x 1 "x" 1}
---
(frequencies (range 20))
;=> {0 1 1 1 2 1 3 1 4 1 5 1 6 1 7 1 8 1 9 1 10 1 11 1 12 1 13 1 14 1 15 1 16 1 17 1 18 1 19 1}
---
;; partition, partition-all
(partition 2 [1 2 3 4 5])
;=> [[1 2] [3 4]]
---
(partition 2 1 [1 2 3])
;=> [[1 2] [2 3]]
---
(partition 3 3 [:a] [1 2 3 4 5])
;=> [[1 2 3] [4 5 :a]]
---
(partition 3 3 [] [1 2 3 4])
;=> [[1 2 3] [4]]
---
(partition 2 3 [1 2 3 4 5 6 7])
;=> [[1 2] [4 5]]
---
(partition 2 nil)
;=> []
---
(partition 0 [1])
;;; "value_error: .*partition: size must be positive, got 0"
---
(partition 2 0 [1])
;;; "value_error: .*partition: step must be positive, got 0"
---
(partition-all 2 [1 2 3])
;=> [[1 2] [3]]
---
(partition-all 2 3 [1 2 3 4 5 6 7])
;=> [[1 2] [4 5] [7]]
---
(partition-all 3 "abcd")
;=> [["a" "b" "c"] ["d"]]
---
(count (partition-all 10 (range 95)))
;=> 10
---
;; flatten, interleave, interpose, zip, combinations
(flatten [1 [2 [3 [4]]] [] 5])
;=> [1 2 3 4 5]
---
(flatten [1 #{2} {:a 1} "ab" [[nil]]])
;=> [1 #{2} {:a 1} "ab" nil]
---
(flatten 5)
;=> []
---
(flatten nil)
;=> []
---
(interleave [1 2 3] [:a :b])
;=> [1 :a 2 :b]
---
(interleave [1 2] [:a :b] ["x" "y"])
;=> [1 :a "x" 2 :b "y"]
---
(interleave)
;=> []
---
(interleave [1 2])
;=> [1 2]
---
(interpose ", " ["a" "b" "c"])
;=> ["a" ", " "b" ", " "c"]
---
(interpose 0 [])
;=> []
---
(zip [1 2 3] [:a :b])
;=> [[1 :a] [2 :b]]
---
(zip [1] [2] [3])
;=> [[1 2 3]]
---
(combinations [1 2 3] 2)
;=> [[1 2] [1 3] [2 3]]
---
(combinations [1 2 3] 0)
;=> [[]]
---
(combinations [1 2] 3)
;=> []
---
(count (combinations (range 10) 3))
;=> 120
---
(combinations (range 60) 30)
;;; "memory_limit"
---
;; conj, cons, concat, into, vec, vector
(conj [1 2] 3 4)
;=> [1 2 3 4]
---
(conj nil 1)
;=> [1]
---
(conj nil 1 2)
;=> [1 2]
---
(conj)
;=> []
---
(conj [1])
;=> [1]
---
(conj #{1} 2 1)
;=> #{1 2}
---
(conj {:a 1} [:b 2])
;=> {:a 1 :b 2}
---
(conj {:a 1} {:b 2 :c 3})
;=> {:a 1 :b 2 :c 3}
---
(conj {:a 1} nil)
;=> {:a 1}
---
;; @ctx {"m": {"n": 1}}
(conj ctx/m [:n 2])
;=> {"n" 2}
---
(conj {:a 1} [:b])
;;; "type_error: .*conj: expected a \\[key value\\] entry or a map, got vector \\[:b\\] \\(arg 2\\)"
---
(conj "ab" "c")
;;; "type_error: .*conj: expected a collection, got string"
---
(take 3 (conj (range) :x))
;=> [:x 0 1]
---
(let [a [1 2] b (conj a 3) c (conj a 4)] [a b c])
;=> [[1 2] [1 2 3] [1 2 4]]
---
(cons 0 [1 2])
;=> [0 1 2]
---
(cons 0 nil)
;=> [0]
---
(cons 0 "ab")
;=> [0 "a" "b"]
---
(take 3 (cons :x (range)))
;=> [:x 0 1]
---
(cons 1 2)
;;; "type_error: .*cons: expected a collection, got 2 \\(arg 2\\)"
---
[(list* 1 2 [3 4]) (list* [1]) (list* nil) (list* []) (list* 1 nil) (list* 1 "ab") (list* 1 2 {:a 1})]
;=> [[1 2 3 4] [1] nil nil [1] [1 "a" "b"] [1 2 [:a 1]]]
---
(take 4 (list* :a :b (range)))
;=> [:a :b 0 1]
---
[(list* (filter odd? [2 4])) (list* (filter odd? [1 2])) (take 2 (list* (range)))]
;=> [nil [1] [0 1]]
---
(list* 1 2)
;;; "type_error: .*list\\*: expected a collection, got 2 \\(arg 2\\)"
---
(run! println [1 "a"])
;; @prints "1\na"
---
(run! inc nil)
;=> nil
---
(run! inc 5)
;;; "type_error: .*run!: expected a collection, got 5 \\(arg 2\\)"
---
(concat [1] nil [2 3] "ab" {:a 1})
;=> [1 2 3 "a" "b" [:a 1]]
---
(concat)
;=> []
---
(concat [1 2])
;=> [1 2]
---
(take 4 (concat [:a] (range)))
;=> [:a 0 1 2]
---
(concat [1] 2)
;;; "type_error: .*concat: expected a collection, got 2 \\(arg 2\\)"
---
(into [1] [2 3])
;=> [1 2 3]
---
(into nil [1 2])
;=> [1 2]
---
(into #{} [1 2 1])
;=> #{1 2}
---
(into {} [[:a 1] [:b 2]])
;=> {:a 1 :b 2}
---
(into {:a 1} {:b 2})
;=> {:a 1 :b 2}
---
(into {} (map (fn [x] [x (* x x)]) [1 2]))
;=> {1 1 2 4}
---
(into [] {:a 1})
;=> [[:a 1]]
---
(into [] "ab")
;=> ["a" "b"]
---
(into [] (take 3 (range)))
;=> [0 1 2]
---
(into)
;=> []
---
(into [1])
;=> [1]
---
(into {} [1])
;;; "type_error: .*into: expected a \\[key value\\] entry or a map, got 1"
---
(into "a" [1])
;;; "type_error: .*into: expected a vector, set or map, got string"
---
(vec nil)
;=> []
---
(vec #{1 2})
;=> [1 2]
---
(vec {:a 1})
;=> [[:a 1]]
---
(vec "ab")
;=> ["a" "b"]
---
(vec (range 3))
;=> [0 1 2]
---
(vec 1)
;;; "type_error: .*vec: expected a collection, got 1"
---
(vector)
;=> []
---
(vector 1 nil "a")
;=> [1 nil "a"]
---
(let [f (fn [& xs] (vector xs))] (f 1 2))
;=> [[1 2]]
---
;; walk, prewalk, postwalk, tree-seq
(walk inc #(apply + %) [1 2 3])
;=> 9
---
(walk (fn [[k v]] [k (inc v)]) identity {:a 1 :b 2})
;=> {:a 2 :b 3}
---
(walk inc identity #{1 2})
;=> #{2 3}
---
(walk inc identity 5)
;=> 5
---
(postwalk #(if (number? %) (inc %) %) [1 [2 {:a 3}]])
;=> [2 [3 {:a 4}]]
---
(prewalk #(if (map? %) (dissoc % :secret) %) {:a {:secret 1 :b 2} :secret 3})
;=> {:a {:b 2}}
---
(postwalk identity 1)
;=> 1
---
(postwalk #(if (keyword? %) (name %) %) {:a [:b]})
;=> {"a" ["b"]}
---
(postwalk #(if (string? %) (upper-case %) %) ["a" {"b" "c"}])
;=> ["A" {"B" "C"}]
---
(tree-seq vector? seq [1 [2 [3]] 4])
;=> [[1 [2 [3]] 4] 1 [2 [3]] 2 [3] 3 4]
---
(map :id (tree-seq :kids :kids {:id 1 :kids [{:id 2 :kids [{:id 3}]} {:id 4}]}))
;=> [1 2 3 4]
---
(tree-seq map? :kids nil)
;=> [nil]
---
;; a character is a one-character string: the characters of a string are
;; leaves (Clojure gives ("ab" \a \b)), so this ends
(tree-seq string? seq "ab")
;=> ["ab" "a" "b"]
---
[(tree-seq string? seq "a") (tree-seq string? seq "") (count (tree-seq (some-fn string? vector?) seq ["ab" ["c" "dé"]]))]
;=> [["a" "a"] [""] 10]
---
;; a node that is its own child (not a character): the tree never ends
(count (tree-seq string? vector "ab"))
;;; "value_error: 2:8: tree-seq: the children of string \"ab\" include itself"
---
(tree-seq (constantly true) (fn [x] [1 x]) 5)
;;; "tree-seq: the children of 5 include itself"
---
;; an endless tree of new nodes ends with a limit: memory or steps (or,
;; under the race detector on a loaded machine, the time limit first)
(count (tree-seq (constantly true) (fn [x] [[x]]) 1))
;;; "memory_limit|step_limit|timeout"
---
;; clojure.walk, also as walk/ and with the replace and key functions
[(clojure.walk/postwalk #(if (number? %) (inc %) %) [1 [2 {:a 3}]]) (walk/prewalk identity {:a [1]}) (clojure.walk/walk inc vec [1 2])]
;=> [[2 [3 {:a 4}]] {:a [1]} [2 3]]
---
(clojure.walk/keywordize-keys {"a" 1 "b" {"c" [{"d" 2}]} :e 3 1 2})
;=> {1 2 :a 1 :b {:c [{:d 2}]} :e 3}
---
[(walk/keywordize-keys nil) (walk/keywordize-keys [1 "a"])]
;=> [nil [1 "a"]]
---
(walk/stringify-keys {:a 1 :b {:c #{:d}} :x/y 2 "s" 3 4 5})
;=> {4 5 "a" 1 "b" {"c" #{:d}} "s" 3 "y" 2}
---
(clojure.walk/prewalk-replace {:a :b 1 2 [3] :v} [:a 1 {:a 1} #{1} [3]])
;=> [:b 2 {:b 2} #{2} :v]
---
(walk/postwalk-replace {[1 2] :pair 1 :one} [[1 2] 1])
;=> [[:one 2] :one]
---
(walk/prewalk-replace 5 [1])
;;; "prewalk-replace: expected a map of replacements"
---
(walk/nope 1)
;;; "unbound_symbol"
---
;; doall, dorun, reductions
(doall (map inc [1 2]))
;=> [2 3]
---
(doall (take 2 (range)))
;=> [0 1]
---
(dorun [1 2])
;=> nil
---
(reductions + [1 2 3])
;=> [1 3 6]
---
(reductions + 10 [1 2])
;=> [10 11 13]
---
(reductions + [])
;=> [0]
---
(reductions (fn [a x] (if (> a 2) (reduced a) (+ a x))) [1 2 3 4])
;=> [1 3 3]
---
(defn k [x] (:p x))
(sort-by k [{:p 1} {:p "a"}])
;;; "type_error: 2:1: sort-by: cannot compare"
---
(mapcat (fn [x] x) [[1] 2])
;;; "type_error: 1:1: mapcat: expected a collection, got 2"
---
(partition-all 3 1 [1 2 3 4])
;=> [[1 2 3] [2 3 4] [3 4] [4]]
---
(partition 3 1 [:p :q] [1 2 3 4 5])
;=> [[1 2 3] [2 3 4] [3 4 5] [4 5 :p]]
---
(interleave (range) [:a :b])
;=> [0 :a 1 :b]
---
(zip [:a :b :c] (iterate inc 1))
;=> [[:a 1] [:b 2] [:c 3]]
---
(zip (range 2) (range 5 100000000))
;=> [[0 5] [1 6]]
---
(sort ["b" "a" "é" "z" "A" "😀" "\uffff"])
;=> ["A" "a" "b" "z" "é" "😀" "￿"]
---
(sort :desc ["b" "a" "c"])
;=> ["c" "b" "a"]
---
(sort-by :n compare [{:n "b"} {:n "a"} {:n "a" :i 2}])
;=> [{:n "a"} {:i 2 :n "a"} {:n "b"}]
---
(sort > ["b" "a"])
;;; "type_error: .*>: expected number, got string"
---
(sort [3 1.5 -1 9007199254740993 9007199254740992])
;=> [-1 1.5 3 9007199254740992 9007199254740993]
---
(sort-by identity > [1 2.0 1.0 2])
;=> [2.0 2 1 1.0]
---
(distinct [1 1.0 2.5 2.5 -0.0 0 ##NaN ##NaN "1" :1])
;=> [1 2.5 -0.0 ##NaN ##NaN "1" :1]
---
(frequencies [1.0 1 "a" "a" :a [1] [1.0]])
;=> {1.0 2 :a 1 "a" 2 [1] 2}
---
(group-by identity [2.0 2 "x"])
;=> {2.0 [2.0 2] "x" ["x"]}
---
;; @ctx {"rows": [{"date": "2024-01-02"}, {"date": "2024-03-01"}]}
(sort-by :date > ctx/rows)
;;; "type_error: 1:1: >: expected number, got string \"2024-0.-0.\" \\(as the sort-by comparator\\)[\\s\\S]*hint: < > <= >= compare numbers only"
---
;; @ctx {"rows": [{"date": "2024-01-02"}, {"date": "2024-03-01"}]}
(map :date (sort-by :date :desc ctx/rows))
;=> ["2024-03-01" "2024-01-02"]
---
(count (sort < [3 ##NaN 1]))
;=> 3
---
;; lazy inputs give lazy results where Clojure's are lazy
(take 3 (distinct (cycle [1 2 1 3 4])))
;=> [1 2 3]
---
(vec (distinct (take 6 (cycle [1 2]))))
;=> [1 2]
---
(take 2 (distinct-by #(mod % 3) (range)))
;=> [0 1]
---
(take 2 (partition 2 (range)))
;=> [[0 1] [2 3]]
---
(take 3 (partition-all 2 3 (range)))
;=> [[0 1] [3 4] [6 7]]
---
(vec (partition 2 (take 5 (range))))
;=> [[0 1] [2 3]]
---
(vec (partition-all 2 (take 5 (range))))
;=> [[0 1] [2 3] [4]]
---
(vec (partition 3 3 [:x] (take 5 (range))))
;=> [[0 1 2] [3 4 :x]]
---
(take 4 (reductions + (range)))
;=> [0 1 3 6]
---
(take 3 (reductions + 100 (range)))
;=> [100 100 101]
---
(vec (reductions + (take 0 (range))))
;=> [0]
---
(vec (reductions (fn [a x] (if (> a 5) (reduced :done) (+ a x))) (range)))
;=> [0 1 3 6 :done]
---
(take 5 (interpose :s (range)))
;=> [0 :s 1 :s 2]
---
(vec (interpose :s (take 2 (range))))
;=> [0 :s 1]
---
(vec (reductions + (drop 100001 (range 100001))))
;=> [0]
---
(vec (partition 2 (drop 100001 (range 100001))))
;=> []
---
(let [base (into {} (map (fn [i] [i i]) (range 20)))
      more (into base [[100 1] [:a 2]])]
  [(count base) (count more) (get base 100) (get more 100)])
;=> [20 22 nil 1]
---
(let [m (zipmap (range 12) (range 12))
      g (into m {0 :x})]
  [(get m 0) (get g 0) (count g)])
;=> [0 :x 12]
---
(let [fs (frequencies (map #(mod % 50) (range 1000)))] [(count fs) (get fs 7) (first (keys fs))])
;=> [50 20 0]
---
;; shared structure: a 2^40-leaf tree built in 40 steps ends in a limit
(count (flatten (loop [v [1] i 0] (if (< i 40) (recur [v v] (inc i)) v))))
;;; "memory_limit|step_limit|timeout"
---
(count (postwalk identity (loop [v [1] i 0] (if (< i 40) (recur [v v] (inc i)) v))))
;;; "memory_limit|step_limit|timeout"
---
(count (tree-seq vector? identity (loop [v [1] i 0] (if (< i 40) (recur [v v] (inc i)) v))))
;;; "memory_limit|step_limit|timeout"
---
(let [t (fn [x] (loop [v [x] i 0] (if (< i 40) (recur [v v] (inc i)) v)))]
  (count (sort [(t 1) (t 1)])))
;;; "step_limit|timeout"
---
(let [t (loop [v [1] i 0] (if (< i 40) (recur [v v] (inc i)) v))]
  (count (sort [t t t])))
;=> 3
---
(sort [[1 [2 3]] [1 [2 2]] [0]])
;=> [[0] [1 [2 2]] [1 [2 3]]]
---
;; distinct of a map or set is an error, as Clojure
(distinct #{1 2})
;;; "type_error: .*distinct: expected a sequence, got set"
