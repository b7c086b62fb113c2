;; sum avg: skip nil, empty → 0 / nil, avg is a float
(sum [1 2 3])
;=> 6
---
(sum [1 2.5])
;=> 3.5
---
(sum [1 nil 2])
;=> 3
---
(sum [])
;=> 0
---
(sum nil)
;=> 0
---
(sum #{1 2})
;=> 3
---
(sum (range 101))
;=> 5050
---
(sum [1 "2"])
;;; "type_error: .*sum: expected number, got string \"2\" \\(item 2\\)"
---
(sum 5)
;;; "type_error: .*sum: expected a collection, got 5 \\(arg 1\\)"
---
(sum [9223372036854775807 1])
;;; "arithmetic_error: .*integer overflow"
---
(avg [1 2])
;=> 1.5
---
(avg [2 2])
;=> 2.0
---
(avg [1 nil 3])
;=> 2.0
---
(avg [])
;=> nil
---
(avg [nil])
;=> nil
---
(avg [1 :a])
;;; "type_error: .*avg: expected number, got keyword :a"
---
;; sum-by avg-by min-by max-by: key is a fn, keyword, string or path
(sum-by :n [{:n 1} {:n 2} {} {:n nil}])
;=> 3
---
(sum-by #(* 2 (:n %)) [{:n 1} {:n 2}])
;=> 6
---
(sum-by [:a :b] [{:a {:b 1.5}} {:a {:b 1}}])
;=> 2.5
---
;; @ctx {"rows": [{"amount": 10, "cat": "x"}, {"amount": 5.5, "cat": "y"}]}
[(sum-by :amount ctx/rows) (sum-by "amount" ctx/rows) (avg-by :amount ctx/rows)]
;=> [15.5 15.5 7.75]
---
(sum-by :n [])
;=> 0
---
(sum-by :n [{:n "x"}])
;;; "type_error: .*sum-by: expected number, got string \"x\" \\(the key's value for item 1\\)"
---
(avg-by :n [{:n 1} {:n 4} {}])
;=> 2.5
---
(avg-by :n [])
;=> nil
---
(max-by :age [{:age 3 :id 1} {:age 9 :id 2} {:age 9 :id 3} {:id 4}])
;=> {:age 9 :id 2}
---
(min-by :age [{:age 3 :id 1} {:age 1 :id 2} {:age 1 :id 3} {:age nil}])
;=> {:age 1 :id 2}
---
(max-by :age [])
;=> nil
---
(max-by :age [{:x 1}])
;=> nil
---
(max-by count ["a" "ccc" "bb"])
;=> "ccc"
---
(max-by :name [{:name "al"} {:name "bo"}])
;=> {:name "bo"}
---
(apply max-by :a [{:a 1} {:a 5} {:a 2}])
;=> {:a 5}
---
(apply min-by :a [{:a 7}])
;=> {:a 7}
---
(max-by :a [{:a 1} {:a "x"}])
;;; "type_error: .*max-by: cannot compare"
---
;; max-key min-key: Clojure 1.11, the last wins on a tie
(max-key count "ab" "cd" "e")
;=> "cd"
---
(min-key count "ab" "cd" "e" "f")
;=> "f"
---
(max-key :a {:a 1})
;=> {:a 1}
---
(apply max-key :score [{:score 1 :id 1} {:score 7 :id 2} {:score 3 :id 3}])
;=> {:id 2 :score 7}
---
(max-key :a {:a 1} {:a nil})
;;; "type_error: .*max-key: expected number, got nil \\(arg 3\\)"
---
;; some every? not-any?
(some even? [1 2 3])
;=> true
---
(some #(when (> % 1) (* 10 %)) [1 2 3])
;=> 20
---
(some even? [1 3])
;=> nil
---
(some even? nil)
;=> nil
---
(some :admin [{:admin nil} {:admin "yes"}])
;=> "yes"
---
(some #{3 4} [1 4 3])
;=> 4
---
(some #(> % 10) (range))
;=> true
---
(some even? 5)
;;; "type_error: .*some: expected a collection, got 5 \\(arg 2\\)"
---
(every? odd? [1 3])
;=> true
---
(every? odd? [1 2])
;=> false
---
(every? odd? [])
;=> true
---
(every? odd? nil)
;=> true
---
(every? :ok [{:ok 1} {:ok true}])
;=> true
---
(every? #{1 2} [1 2 1])
;=> true
---
(every? #(< % 5) (range))
;=> false
---
(not-any? odd? [2 4])
;=> true
---
(not-any? odd? [2 3])
;=> false
---
(not-any? odd? [])
;=> true
---
;; contains?: map keys (flex), set members, vector values (not indexes, unlike Clojure), nil → false
(contains? {:a 1} :a)
;=> true
---
(contains? {:a nil} :a)
;=> true
---
(contains? {:a 1} :b)
;=> false
---
;; @ctx {"m": {"id": 1}}
[(contains? ctx/m :id) (contains? ctx/m "id") (contains? ctx/m :x)]
;=> [true true false]
---
(contains? #{1 2} 2)
;=> true
---
(contains? #{1 2} 1.0)
;=> true
---
(contains? #{:a} "a")
;=> false
---
(contains? [10 20] 10)
;=> true
---
(contains? [10 20] 1)
;=> false
---
(contains? nil 1)
;=> false
---
(contains? (range 5) 3)
;=> true
---
(contains? "abc" 1)
;=> true
---
(contains? "abc" 5)
;=> false
---
(contains? 5 1)
;;; "type_error: .*contains\\?: expected a collection, got 5 \\(arg 1\\)"
---
;; errors raised after calling a user fn point at the builtin's call
(defn f [x] (:n x))
(sum-by f [{:n 1} {:n "a"}])
;;; "type_error: 3:1: sum-by: expected number, got string \"a\" \\(the key's value for item 2\\)"
---
(defn k [x] (count x))
(max-key k "a" nil)
;=> "a"
---
(defn k [x] (:a x))
  (max-key k {:a 1} {})
;;; "type_error: 2:3: max-key: expected number, got nil \\(arg 3\\)"
