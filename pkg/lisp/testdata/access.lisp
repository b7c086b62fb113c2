;; access: first second last
(first [1 2 3])
;=> 1
---
(first [])
;=> nil
---
(first nil)
;=> nil
---
(first "héllo")
;=> "h"
---
(first #{3 1 2})
;=> 1
---
(first (range))
;=> 0
---
(first {:k "v"})
;=> [:k "v"]
---
[(first {}) (second {:a 1 :b 2}) (ffirst {:a 1}) (fnext {:a 1 :b 2})]
;=> [nil [:b 2] :a [:b 2]]
---
(map key {:b 2 :a 1})
;=> [:a :b]
---
(nth {:a 1} 0)
;;; "type_error: 1:1: nth: expected a vector, set, string or sequence, got map \\{:a 1\\} \\(arg 1\\)[\\s\\S]*use get"
---
(first 42)
;;; "type_error: 1:1: first: expected a collection, got 42 \\(arg 1\\)"
---
(first)
;;; "arity_error: .*first expects 1 arg, got 0"
---
(second [1 2 3])
;=> 2
---
(second [1])
;=> nil
---
(second "ab")
;=> "b"
---
(second (iterate inc 10))
;=> 11
---
(last [1 2 3])
;=> 3
---
(last [])
;=> nil
---
(last nil)
;=> nil
---
(last "abé")
;=> "é"
---
(last #{1 5 3})
;=> 5
---
(last (range 5))
;=> 4
---
[(last {:a 1 :b 2}) (last {})]
;=> [[:b 2] nil]
---
;; nth: out of range → nil (unlike Clojure), negative → nil, optional default
(nth [10 20 30] 1)
;=> 20
---
(nth [10 20 30] 3)
;=> nil
---
(nth [10 20 30] -1)
;=> nil
---
(nth [10 20 30] 5 :none)
;=> :none
---
(nth [10 20 30] -1 :none)
;=> :none
---
(nth "abc" 1)
;=> "b"
---
(nth "añb" 2)
;=> "b"
---
(nth nil 0)
;=> nil
---
(nth (range) 100)
;=> 100
---
(nth (range 3) 5 :d)
;=> :d
---
(nth [1 2 3] 1.7)
;=> 2
---
(nth [1 2 3] "1")
;;; "type_error: .*nth: expected integer, got string \"1\" \\(arg 2\\)"
---
(nth 5 0)
;;; "type_error: .*nth: expected a collection, got 5 \\(arg 1\\)"
---
(nth {:a 1} 0)
;;; "type_error: .*nth: expected a vector, set, string or sequence"
---
;; rest / next / butlast
(rest [1 2 3])
;=> [2 3]
---
(rest [1])
;=> []
---
(rest [])
;=> []
---
(rest nil)
;=> []
---
(rest "abc")
;=> ["b" "c"]
---
(rest {:a 1 :b 2})
;=> [[:b 2]]
---
(take 3 (rest (range)))
;=> [1 2 3]
---
(rest 5)
;;; "type_error: .*rest: expected a collection, got 5"
---
(next [1 2 3])
;=> [2 3]
---
(next [1])
;=> nil
---
(next nil)
;=> nil
---
(next (range 1))
;=> nil
---
(first (next (range)))
;=> 1
---
(butlast [1 2 3])
;=> [1 2]
---
(butlast [1])
;=> nil
---
(butlast nil)
;=> nil
---
(butlast "abc")
;=> ["a" "b"]
---
(ffirst [[1 2] [3]])
;=> 1
---
(ffirst [])
;=> nil
---
(fnext [[1 2] [3]])
;=> [3]
---
(nfirst [[1 2 3] [4]])
;=> [2 3]
---
(nfirst [[1]])
;=> nil
---
(nnext [1 2 3])
;=> [3]
---
(nnext [1 2])
;=> nil
---
;; take / drop
(take 2 [1 2 3])
;=> [1 2]
---
(take 5 [1 2 3])
;=> [1 2 3]
---
(take 0 [1 2 3])
;=> []
---
(take -1 [1 2 3])
;=> []
---
(take 2.5 [1 2 3 4])
;=> [1 2 3]
---
(take 2 nil)
;=> []
---
(take 2 "abc")
;=> ["a" "b"]
---
(take 2 #{3 2 1})
;=> [1 2]
---
(take 3 (range))
;=> [0 1 2]
---
(take 3 (iterate #(* 2 %) 1))
;=> [1 2 4]
---
(take :a [1])
;;; "type_error: .*take: expected number, got keyword :a \\(arg 1\\)"
---
(take 2 5)
;;; "type_error: .*take: expected a collection, got 5 \\(arg 2\\)"
---
(conj (take 2 [1 2 3]) 9)
;=> [1 2 9]
---
(let [v [1 2 3] t (take 2 v) x (conj t 9)] [v t x])
;=> [[1 2 3] [1 2] [1 2 9]]
---
(drop 2 [1 2 3])
;=> [3]
---
(drop 5 [1 2 3])
;=> []
---
(drop -1 [1 2 3])
;=> [1 2 3]
---
(drop 1.5 [1 2 3 4])
;=> [3 4]
---
(drop 1 nil)
;=> []
---
(drop 1 "abc")
;=> ["b" "c"]
---
(take 2 (drop 5 (range)))
;=> [5 6]
---
(nthrest [1 2 3] 2)
;=> [3]
---
;; as Clojure: nothing dropped is the collection itself; nil stays nil
[(nthrest {:a 1} 0) (nthrest "ab" 0) (nthrest [1 2] -1) (nthrest nil 2) (nthrest [1] 3)]
;=> [{:a 1} "ab" [1 2] nil []]
---
(nthnext [1 2 3] 3)
;=> nil
---
(nthnext [1 2 3] 1)
;=> [2 3]
---
(take-last 2 [1 2 3])
;=> [2 3]
---
(take-last 5 [1 2 3])
;=> [1 2 3]
---
(take-last 2 [])
;=> nil
---
(take-last 2 "abc")
;=> ["b" "c"]
---
(take-last 0 [1 2])
;=> nil
---
(drop-last [1 2 3])
;=> [1 2]
---
(drop-last 2 [1 2 3])
;=> [1]
---
(drop-last 5 [1 2 3])
;=> []
---
(drop-last 1 nil)
;=> []
---
(take-while odd? [1 3 4 5])
;=> [1 3]
---
(take-while odd? [1 3])
;=> [1 3]
---
(take-while odd? nil)
;=> []
---
(take-while #(< % 4) (range))
;=> [0 1 2 3]
---
(take-while :ok [{:ok 1} {:ok true} {} {:ok 1}])
;=> [{:ok 1} {:ok true}]
---
(take-while #{1 2} [1 2 3 1])
;=> [1 2]
---
(drop-while odd? [1 3 4 5])
;=> [4 5]
---
(drop-while odd? [1 3])
;=> []
---
(drop-while odd? nil)
;=> []
---
(take 2 (drop-while #(< % 4) (range)))
;=> [4 5]
---
(take-nth 2 [1 2 3 4 5])
;=> [1 3 5]
---
(take 3 (take-nth 3 (range)))
;=> [0 3 6]
---
(take-nth 0 [1])
;;; "value_error: .*take-nth: step must be positive, got 0"
---
;; empty? not-empty seq
(empty? [])
;=> true
---
(empty? nil)
;=> true
---
(empty? "")
;=> true
---
(empty? {})
;=> true
---
(empty? #{})
;=> true
---
(empty? [1])
;=> false
---
(empty? {:a 1})
;=> false
---
(empty? (range))
;=> false
---
(empty? (filter odd? (range 0 10 2)))
;=> true
---
(empty? 42)
;;; "type_error: .*empty\\?: expected a collection, got 42 \\(arg 1\\)"
---
(not-empty [])
;=> nil
---
(not-empty [1])
;=> [1]
---
(not-empty "ab")
;=> "ab"
---
(not-empty nil)
;=> nil
---
(seq [])
;=> nil
---
(seq nil)
;=> nil
---
(seq [1 2])
;=> [1 2]
---
(seq {:a 1 :b 2})
;=> [[:a 1] [:b 2]]
---
(seq "ab")
;=> ["a" "b"]
---
(seq "")
;=> nil
---
(seq #{2 1})
;=> [1 2]
---
(take 2 (seq (range)))
;=> [0 1]
---
(seq 1)
;;; "type_error: .*seq: expected a collection, got 1 \\(arg 1\\)"
---
;; host data: string-keyed maps, flex keys
;; @ctx {"users": [{"name": "ann", "age": 31}, {"name": "bob", "age": 25}]}
[(first ctx/users) (:name (last ctx/users)) (count (rest ctx/users))]
;=> [{"age" 31 "name" "ann"} "bob" 1]
---
(loop [xs [1 2 3] acc 0] (if (empty? xs) acc (recur (rest xs) (+ acc (first xs)))))
;=> 6
---
(loop [xs (range 5) acc []] (if-let [s (seq xs)] (recur (next s) (conj acc (first s))) acc))
;=> [0 1 2 3 4]
