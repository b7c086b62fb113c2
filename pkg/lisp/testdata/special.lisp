;; do / if / when
(do)
;=> nil
---
(do 1 2 3)
;=> 3
---
(if true 1 2)
;=> 1
---
(if nil 1)
;=> nil
---
(if false 1 2)
;=> 2
---
(if 0 :truthy :falsy)
;=> :truthy
---
(if)
;;; "arity_error: 1:1: if expects 2 or 3 args, got 0"
---
(if 1 2 3 4)
;;; "arity_error: 1:1: if expects 2 or 3 args, got 4"
---
(if-not false :a :b)
;=> :a
---
(when true 1 2)
;=> 2
---
(when false 1)
;=> nil
---
(when-not false 1 2)
;=> 2
---
(cond false 1 nil 2 :else 3)
;=> 3
---
(cond false 1)
;=> nil
---
(cond (= 1 2) :a (= 1 1) :b)
;=> :b
---
(cond 1)
;;; "analysis_error: 1:1: cond requires an even number of forms"
---
;; case
(case 3 1 :one (2 3) :two-or-three :default)
;=> :two-or-three
---
(case "b" "a" 1 "b" 2)
;=> 2
---
(case :x :x 1 :y 2)
;=> 1
---
(case 9 1 :one :default)
;=> :default
---
(case 9 1 :one)
;;; "value_error: 1:1: case: no matching clause: 9"
---
(case [1 2] [1 2] :vec :no)
;=> :vec
---
(condp = 2 1 :a 2 :b :none)
;=> :b
---
(condp > 5 1 :a 10 :b)
;=> :b
---
(condp = 9 1 :a)
;;; "no matching clause: 9"
---
;; :>> passes the predicate's result to a function (Clojure 1.11)
(condp some [1 2 3 4] #{0 6 7} :>> inc #{4 5 9} :>> dec #{1 2 3} :>> #(+ % 3))
;=> 3
---
(condp some [1 2 3 4] #{7} :>> inc :none)
;=> :none
---
(condp #(get %2 %1) {:a 5} :b :>> inc :a :>> (fn [x] (* 10 x)))
;=> 50
---
(condp = 2 1 :a 2 :>> str)
;=> "true"
---
(condp = 2 1 :>>)
;;; "condp: :>> needs a function after it"
---
;; if-let family
(if-let [x 5] (+ x 1) :no)
;=> 6
---
(if-let [x false] :yes :no)
;=> :no
---
(if-let [x nil] :yes)
;=> nil
---
(if-let [[a b] [1 2]] (+ a b) 0)
;=> 3
---
(when-let [x 2] (+ x 1) (* x 10))
;=> 20
---
(when-let [x nil] 1)
;=> nil
---
(if-some [x false] :some :none)
;=> :some
---
(if-some [x nil] :some :none)
;=> :none
---
(when-some [x 0] (+ x 1))
;=> 1
---
(when-first [x [7 8]] (* x 2))
;=> 14
---
(when-first [x []] :never)
;=> nil
---
(when-first [x (range)] x)
;=> 0
---
;; let and destructuring
(let [x 1 y (+ x 1) x (* y 10)] [x y])
;=> [20 2]
---
(let [x 1] (let [x 2] x))
;=> 2
---
(let [count 3] count)
;=> 3
---
(let [[a b] [1]] [a b])
;=> [1 nil]
---
(let [[a & more] [1 2 3]] [a more])
;=> [1 [2 3]]
---
(let [[a & more] [1]] [a more])
;=> [1 nil]
---
(let [[a [b c]] [1 [2 3]]] [a b c])
;=> [1 2 3]
---
(let [[a b :as all] [1 2 3]] [a b all])
;=> [1 2 [1 2 3]]
---
(let [[a b] nil] [a b])
;=> [nil nil]
---
(let [[a b] "xy"] [a b])
;=> ["x" "y"]
---
;; with &, a map is read as its [key value] entries (first and next), as
;; Clojure; without &, by index, which a map has not
(let [[a b & more :as all] {:a 1 :b 2 :c 3}] [a b more all])
;=> [[:a 1] [:b 2] [[:c 3]] {:a 1 :b 2 :c 3}]
---
(let [[_ & r] {:a 1}] r)
;=> nil
---
(let [[a b] {:a 1}] a)
;;; "destructure_error: 1:7: a map has no positions to destructure \\(nth\\): destructure \\(seq m\\) for its \\[key value\\] entries, got map \\{:a 1\\}"
---
(let [[[k v]] (seq {:only 1})] [k v])
;=> [:only 1]
---
(let [[a b] 5] a)
;;; "destructure_error: 1:7: expected a collection or nil, got 5"
---
(let [{:keys [a b]} {:a 1 :b 2}] [a b])
;=> [1 2]
---
(let [{:keys [a b]} {"a" 1 "b" 2}] [a b])
;=> [1 2]
---
(let [{:keys [:a]} {:a 1}] a)
;=> 1
---
(let [{:strs [a b]} {"a" 1 "b" 2}] [a b])
;=> [1 2]
---
(let [{:syms [a]} {"a" 5}] a)
;=> 5
---
(let [{:keys [a b] :or {a 10 b 20}} {:a nil}] [a b])
;=> [nil 20]
---
(let [d 7 {:keys [a] :or {a (* d 2)}} {}] a)
;=> 14
---
(let [{x :a y "b" [p q] :pair} {:a 1 "b" 2 :pair [3 4]}] [x y p q])
;=> [1 2 3 4]
---
(let [{:keys [a] :as m} {:a 1 :z 2}] [a m])
;=> [1 {:a 1 :z 2}]
---
(let [{:keys [a]} nil] a)
;=> nil
---
(let [{:keys [a]} 5] a)
;;; "destructure_error: .*expected map or nil, got 5"
---
(let [{{:keys [c]} :b} {:b {:c 9}}] c)
;=> 9
---
(let [x])
;;; "let binding vector requires an even number of forms"
---
(let [1 2] 3)
;;; "invalid binding pattern: 1"
---
(let [nil 2] 3)
;;; "cannot bind nil: it is reserved"
---
;; fn
((fn [x y] (+ x y)) 1 2)
;=> 3
---
((fn [x] x) 1 2)
;;; "arity_error: 1:1: fn expects 1 arg, got 2"
---
((fn [x & xs] [x xs]) 1 2 3)
;=> [1 [2 3]]
---
((fn [& xs] xs))
;=> nil
---
((fn [x & xs] x))
;;; "arity_error: .*fn expects 1 or more args, got 0"
---
((fn [[a b] {:keys [c]}] [a b c]) [1 2] {:c 3})
;=> [1 2 3]
---
((fn f [n] (if (= n 0) :done (f (dec n)))) 5)
;=> :done
---
(def g (fn ([] 0) ([x] x) ([x y] (+ x y)) ([x y & more] (apply + x y more))))
[(g) (g 1) (g 1 2) (g 1 2 3 4)]
;=> [0 1 3 10]
---
((fn ([x] 1) ([y] 2)) 1)
;;; "fn has two arities with 1 params"
---
(defn h ([x] x) ([x y] y))
(h 1 2 3)
;;; "arity_error: .*h expects 1 or 2 args, got 3"
---
(fn)
;;; "fn requires a parameter vector"
---
(let [a 1 f (fn [] a) a 2] [(f) a])
;=> [1 2]
---
(let [mk (fn [n] (fn [x] (+ x n))) add2 (mk 2) add5 (mk 5)] [(add2 1) (add5 1)])
;=> [3 6]
---
(let [fs (for [i [1 2 3]] (fn [] i))] (map (fn [f] (f)) fs))
;=> [1 2 3]
---
(loop [i 0 fs []] (if (< i 3) (recur (inc i) (into-fns fs i)) 0))
;;; "undefined symbol: into-fns"
---
(let [x 10] ((fn [] ((fn [] x)))))
;=> 10
---
(pr-str (fn [a b] a))
;=> "#fn[a b]"
---
;; defn / def / defonce
(defn add [a b] (+ a b))
(add 2 3)
;=> 5
---
(defn add "docstring" [a b] (+ a b))
(add 2 3)
;=> 5
---
(defn ev? [n] (if (= n 0) true (od? (dec n))))
(defn od? [n] (if (= n 0) false (ev? (dec n))))
(ev? 10)
;=> true
---
(def x 5)
;=> #'x
---
(def x 5)
(def y (* x 2))
[x y]
;=> [5 10]
---
(def map 1)
;;; "redefine_error: 1:6: cannot redefine builtin 'map'"
---
(defn filter [x] x)
;;; "cannot redefine builtin 'filter'"
---
(defonce a 1)
(defonce a (fail "not evaluated"))
a
;=> 1
---
;; @mem {"a": 5}
(defonce a 1)
a
;=> 5
---
(defn f [] (def inner 42) :ok)
(f)
inner
;=> 42
---
(x-later)
(defn x-later [] 1)
;;; "unbound_symbol: .*undefined symbol: x-later"
---
;; letfn
(letfn [(ev? [n] (if (= n 0) true (od? (dec n))))
        (od? [n] (if (= n 0) false (ev? (dec n))))]
  [(ev? 4) (od? 4)])
;=> [true false]
---
(letfn [(f [x] (* x 2))] (f 4))
;=> 8
---
;; loop / recur
(loop [i 0 acc 0] (if (< i 5) (recur (inc i) (+ acc i)) acc))
;=> 10
---
(loop [[x & xs] [1 2 3] acc 0] (if x (recur xs (+ acc x)) acc))
;=> 6
---
(defn cnt [n acc] (if (= n 0) acc (recur (dec n) (inc acc))))
(cnt 100000 0)
;=> 100000
---
(defn v [x & more] (if more (recur (+ x (first-of more)) nil) x))
;;; "undefined symbol: first-of"
---
(loop [i 0] (if (< i 3) (+ 1 (recur (inc i))) i))
;;; "analysis_error: .*recur must be in tail position"
---
(recur 1)
;;; "recur must be in tail position"
---
(loop [i 0] (recur))
;;; "recur expects 1 arg \\(the loop's bindings\\), got 0"
---
(fn [x] (let [y (recur 1)] y))
;;; "recur must be in tail position"
---
(loop [i 0] (when (< i 3) (recur (inc i))))
;=> nil
---
(loop [i 0] (cond (> i 5) i :else (recur (+ i 2))))
;=> 6
---
(loop [i 0] (if (< i 10) (do (recur (inc i))) i))
;=> 10
---
;; @looplimit 100
(loop [i 0] (if (< i 1000) (recur (inc i)) i))
;;; "loop_limit: .*loop limit exceeded \\(100 iterations\\)"
---
;; and / or
(and)
;=> true
---
(or)
;=> nil
---
(and 1 2 3)
;=> 3
---
(and 1 nil 3)
;=> nil
---
(and 1 false (fail "no"))
;=> false
---
(or nil false 3)
;=> 3
---
(or nil false)
;=> false
---
(or counter 0)
;=> 0
---
(or (+ 1 counter) 0)
;;; "undefined symbol: counter"
---
;; threading
(-> 5 (- 2) (* 10))
;=> 30
---
(->> 5 (- 2) (* 10))
;=> -30
---
(-> {:a {:b 5}} :a :b)
;=> 5
---
(-> 1 inc #(* % 10))
;=> 20
---
(-> 1 (+ 1) (return) (+ 100))
;=> 2
---
(some-> {:a 1} :b inc)
;=> nil
---
(some->> [1 2] (map inc) (reduce +))
;=> 5
---
(as-> 5 x (+ x 1) (* x x))
;=> 36
---
(cond-> 1 true inc (= 1 2) (* 100) true (* 10))
;=> 20
---
(cond->> [1 2 3] true (map inc) false (map dec))
;=> [2 3 4]
---
;; for / doseq
(for [x [1 2 3]] (* x x))
;=> [1 4 9]
---
(for [x [1 2] y [:a :b]] [x y])
;=> [[1 :a] [1 :b] [2 :a] [2 :b]]
---
(for [x [1 2 3 4] :when (> x 2)] x)
;=> [3 4]
---
(for [x [1 2 3 4 1] :while (< x 3)] x)
;=> [1 2]
---
(for [x [1 2 3] :let [y (* x 10)] :when (> y 10)] y)
;=> [20 30]
---
(for [x [1 2 3] y [1 2 3] :while (< y x)] [x y])
;=> [[2 1] [3 1] [3 2]]
---
(for [[k v] {:a 1 :b 2}] [v k])
;=> [[1 :a] [2 :b]]
---
(for [x []] x)
;=> []
---
(for [x (range) :while (< x 3)] x)
;=> [0 1 2]
---
(for [c "ab"] c)
;=> ["a" "b"]
---
(for [x [1] :foo 2] x)
;;; "invalid for modifier :foo"
---
(doseq [x [1 2 3]] (println x))
;; @prints "1"
;; @prints "2"
;; @prints "3"
;=> nil
---
(doseq [x [1 2] y [:a]] (println x y))
;; @prints "1 :a"
;; @prints "2 :a"
---
;; quote
'(1 2 3)
;=> [1 2 3]
---
'[:a "b" nil]
;=> [:a "b" nil]
---
'{:a 1}
;=> {:a 1}
---
(quote (1 (2 3)))
;=> [1 [2 3]]
---
'x
;;; "quoting a symbol is not supported"
---
(comment (fail "never"))
;=> nil
---
;; #()
(#(+ % 1) 1)
;=> 2
---
(#(+ %1 %2) 1 2)
;=> 3
---
(#(vector %&) 1 2)
;=> [[1 2]]
---
(#(count %&) 1 2 3)
;=> 3
---
(#(42))
;=> 42
---
(#({:id %}) 7)
;=> {:id 7}
---
(#([% %]) 1)
;=> [1 1]
---
(map #(* 2 %) [1 2])
;=> [2 4]
---
(#(+ %2 1) 1 2)
;=> 3
---
#(#(%))
;;; "parse_error: .*nested #\\(\\) is not allowed"
---
(+ % 1)
;;; "undefined symbol: %"
---
;; where / combinators
(filter (where :age > 30) [{:age 31} {:age 20} {:age nil} {}])
;=> [{:age 31}]
---
(filter (where :status = :active) [{"status" "active"} {:status :active} {:status "x"}])
;=> [{"status" "active"} {:status :active}]
---
(filter (where :tags includes "a") [{:tags ["a" "b"]} {:tags ["c"]} {:tags "xa"}])
;=> [{:tags ["a" "b"]} {:tags "xa"}]
---
(filter (where :role in [:admin "owner"]) [{:role "admin"} {:role "owner"} {:role "user"}])
;=> [{:role "admin"} {:role "owner"}]
---
(filter (where [:user :age] >= 18) [{:user {:age 18}} {:user {:age 17}}])
;=> [{:user {:age 18}}]
---
(filter (where :active) [{:active true} {:active false} {}])
;=> [{:active true}]
---
(filter (where :x not= 1) [{:x 1} {:x 2}])
;=> [{:x 2}]
---
(where :x like 1)
;;; "where: unknown operator like"
---
(filter (all-of (where :a > 1) (where :b < 5)) [{:a 2 :b 3} {:a 2 :b 9} {:a 0 :b 0}])
;=> [{:a 2 :b 3}]
---
(filter (any-of (where :a > 1) (where :b < 5)) [{:a 2 :b 9} {:a 0 :b 9} {:a 0 :b 0}])
;=> [{:a 2 :b 9} {:a 0 :b 0}]
---
(filter (none-of (where :a > 1)) [{:a 2} {:a 0}])
;=> [{:a 0}]
---
[((all-of) 1) ((any-of) 1) ((none-of) 1)]
;=> [true false true]
---
((juxt inc dec) 5)
;=> [6 4]
---
((juxt :a :b) {:a 1 :b 2})
;=> [1 2]
---
;; callables
(:a {:a 1})
;=> 1
---
(:a {:b 1} :dflt)
;=> :dflt
---
(:a 42)
;=> nil
---
({:a 1} :a)
;=> 1
---
({"id" 1} :id)
;=> 1
---
(#{1 2} 2)
;=> 2
---
(#{1 2} 3)
;=> nil
---
([10 20] 1)
;=> 20
---
(42 1)
;;; "not_callable: 1:1: not callable: 42"
---
(let [x 42] (x 1))
;;; "not_callable: .*not callable: 42"
---
("abc" 1)
;;; "not callable: string \"abc\""
---
;; reduced, lazy
(reduce (fn [a x] (if (> x 3) (reduced a) (+ a x))) 0 [1 2 3 4 5])
;=> 6
---
(reduced? (reduced 1))
;=> true
---
(reduce + [])
;=> 0
---
(reduce (fn [a b] (+ a b)) [])
;;; "arity_error: .*fn expects 2 args, got 0"
---
(reduce (fn [a b] (+ a b)) [5])
;=> 5
---
(reduce + (range 10))
;=> 45
---
(reduce (fn [a x] (if (>= a 10) (reduced a) (+ a x))) 0 (iterate inc 0))
;=> 10
---
(reduce (fn [a x] (if (>= a 3) (reduced a) (+ a x))) 0 (repeat 1))
;=> 3
---
(reduce (fn [a x] (if (>= (count a) 5) (reduced a) (str a x))) "" (cycle ["a" "b"]))
;=> "ababa"
---
(reduce (fn [a x] (if (> a 2) (reduced a) (+ a x))) 0 (repeatedly (fn [] 1)))
;=> 3
---
(range 5)
;=> [0 1 2 3 4]
---
(range 2 10 3)
;=> [2 5 8]
---
(range 5 0 -2)
;=> [5 3 1]
---
;; as Clojure: the first item is start as given, the others floats
[(range 0 1 0.25) (range 3 5 0.5) (range 0.5 3) (range 0 -1 -0.5)]
;=> [[0 0.25 0.5 0.75] [3 3.5 4.0 4.5] [0.5 1.5 2.5] [0 -0.5]]
---
;; a step below start's float precision would never end the range
(range 1e16 10000000000000010.0 0.5)
;;; "value_error: 2:1: range: step 0.5 does not change 1.0E16 \\(below its float precision\\): the range would never end"
---
(range 0 5 0)
;=> []
---
(repeat 3 :x)
;=> [:x :x :x]
---
(map inc (range 3))
;=> [1 2 3]
---
(reduce + (map inc (range 200000)))
;=> 20000100000
---
(reduce + (filter (fn [x] (> x 5)) (range 10)))
;=> 30
---
;; @maxmemory 200000
(count (range))
;;; "memory_limit"
---
(apply + 1 2 [3 4])
;=> 10
---
(apply + [])
;=> 0
---
(apply + 1 nil)
;=> 1
---
(apply str #{"a"})
;=> "a"
---
(range 200000 200003)
;=> [200000 200001 200002]
---
(= (range 100001) (range 100001))
;=> true
---
(map inc (range 100001 100003))
;=> [100002 100003]
---
;; @maxmemory 200000
(iterate inc 0)
;;; "memory_limit"
---
;; @maxmemory 200000
(return (repeat 1))
;;; "memory_limit"
---
(let [s (iterate inc 0)] (pmap (fn [n] (reduce (fn [a x] (if (>= x n) (reduced a) (+ a x))) 0 s)) [10 20 30 40]))
;=> [45 190 435 780]
---
;; reduce with a linear accumulator (transient in place) keeps persistence
(let [base (into {} (map (fn [i] [i i]) (range 20)))
      out (reduce (fn [m x] (assoc m x (* x 10))) base (range 15 40))]
  [(count base) (get base 15) (count out) (get out 15) (get out 39)])
;=> [20 15 40 150 390]
---
(let [out (reduce (fn [m x] (if (even? x) (update m (mod x 7) (fnil inc 0)) m)) {} (range 1000))
      again (assoc out :extra 1)]
  [(count out) (get out 0) (count again) (contains? out :extra)])
;=> [7 72 8 false]
---
(reduce (fn [m x] (if (> x 50) (reduced m) (assoc m x x))) {} (range 100))
;=> {0 0 1 1 2 2 3 3 4 4 5 5 6 6 7 7 8 8 9 9 10 10 11 11 12 12 13 13 14 14 15 15 16 16 17 17 18 18 19 19 20 20 21 21 22 22 23 23 24 24 25 25 26 26 27 27 28 28 29 29 30 30 31 31 32 32 33 33 34 34 35 35 36 36 37 37 38 38 39 39 40 40 41 41 42 42 43 43 44 44 45 45 46 46 47 47 48 48 49 49 50 50}
---
;; not linear: the accumulator is also stored, so no in-place update
(let [seen (reduce (fn [acc x] (conj acc (assoc (last-or-empty acc) x x))) [] [1 2])] seen)
;;; "undefined symbol: last-or-empty"
---
(let [snaps (reduce (fn [acc x] {:m (assoc (:m acc) x x) :prev (:m acc)}) {:m (into {} (map (fn [i] [i i]) (range 10)))} [100 101])]
  [(count (:m snaps)) (count (:prev snaps))])
;=> [12 11]
---
((fn f [x & rest] (if rest (recur (+ x (first rest)) (next rest)) x)) 1 2 3 4)
;=> 10
---
((fn [& xs] (if (next xs) (recur (rest xs)) xs)) 1 2 3)
;=> [3]
---
---
;; locals shadow the forms that are macros in Clojure, not its special forms
(let [if inc] (if true 1 2))
;=> 1
---
(let [do inc] [(do 1) (map do [1 2])])
;=> [1 [2 3]]
---
(let [when inc] (when 1))
;=> 2
---
(let [quote inc] (quote 1))
;=> 1
---
;; a #() reducer with a linear accumulator keeps persistence too
(let [base (into {} (map (fn [i] [i i]) (range 20)))
      out (reduce #(assoc %1 %2 (* %2 10)) base (range 15 40))]
  [(count base) (get base 15) (count out) (get out 15) (get out 39)])
;=> [20 15 40 150 390]
---
(let [out (reduce #(assoc % (mod %2 5) (count %)) {} (range 20))]
  out)
;=> {0 5 1 5 2 5 3 5 4 5}
---
;; a loop that builds a map with assoc (linear binding, transient in place) keeps persistence
(let [base (into {} (map (fn [i] [i i]) (range 20)))
      out (loop [m base i 15] (if (< i 40) (recur (assoc m i (* i 10)) (inc i)) m))]
  [(count base) (get base 15) (count out) (get out 15) (get out 39) (= out (assoc out :x 1))])
;=> [20 15 40 150 390 false]
---
(let [out (loop [m {} xs (range 1000)]
            (if (empty? xs) m (recur (if (even? (first xs)) (update m (mod (first xs) 7) (fnil inc 0)) m) (rest xs))))
      again (assoc out :extra 1)]
  [(count out) (get out 0) (count again) (contains? out :extra)])
;=> [7 72 8 false]
---
(loop [m {} i 0] (if (< i 3) (recur (assoc m i i) (inc i)) [(count m) m]))
;=> [3 {0 0 1 1 2 2}]
---
(let [ms (for [j (range 3)] (loop [m {:j j} i 0] (if (< i 20) (recur (assoc m i j) (inc i)) m)))]
  (map (fn [m] [(count m) (get m 19) (:j m)]) ms))
;=> [[21 0 0] [21 1 1] [21 2 2]]
---
(defn build [m n] (loop [acc m i 0] (if (< i n) (recur (assoc acc i i) (inc i)) acc)))
(let [a (build {} 30) b (build a 40) c (build a 10)]
  [(count a) (count b) (count c) (= a c)])
;=> [30 40 30 true]
---
(loop [m [] i 0] (if (< i 3) (recur (assoc m i i) (inc i)) m))
;=> [0 1 2]
---
;; duplicate case constants are an error, as Clojure
(case 1 1 :a 1 :b)
;;; "analysis_error: 2:14: case: duplicate test constant: 1"
---
(case 1 (1 2) :a 2 :b)
;;; "case: duplicate test constant: 2"
---
;; map destructuring of a vector reads by index; qualified :keys
[(let [{a 0 b 1} [10 20]] [a b]) (let [{a 0 b 5 :or {b :none}} [10 20]] [a b]) (let [{:keys [a] :as all} [1 2]] [a all])]
;=> [[10 20] [10 :none] [nil [1 2]]]
---
[(let [{:keys [a/b c/d]} {:a/b 1 :c/d 2}] [b d]) (let [{:keys [:a/b]} {:a/b 1}] b) (let [{:a/keys [b c]} {:a/b 1 :a/c 2}] [b c]) ((fn [& {:keys [a b]}] [a b]) :a 1 :b 2) (let [[x & {:keys [k]}] [1 :k 2]] [x k])]
;=> [[1 2] 1 [1 2] [1 2] [1 2]]
---
;; :pre and :post conditions
[((fn [x] {:pre [(pos? x)]} x) 1) ((fn [x] {:post [(> % x)]} (inc x)) 1) ((fn [x] {:pre [(pos? x)]}) 1) ((fn [n acc] {:pre [(>= n 0)]} (if (zero? n) acc (recur (dec n) (* acc n)))) 5 1)]
;=> [1 2 {:pre [true]} 120]
---
((fn [x] {:pre [(pos? x)]} x) -1)
;;; "value_error: 1:17: Assert failed: \\(pos\\? x\\)"
---
(do (defn f [x] {:pre [(number? x)] :post [(> % 0)]} (inc x)) (f -5))
;;; "Assert failed: \\(> % 0\\)"
