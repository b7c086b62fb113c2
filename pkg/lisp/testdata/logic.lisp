;; builtins_logic.go: predicates, type, compare
[(boolean nil) (boolean false) (boolean 0) (boolean "") (boolean []) (identity 5) (identity nil)]
;=> [false false true true true 5 nil]
---
[(nil? nil) (nil? false) (some? nil) (some? false) (some? 0)]
;=> [true false false true true]
---
;; number? is true for Inf and NaN
[(number? 1) (number? 1.5) (number? ##NaN) (number? ##-Inf) (number? "1") (number? nil)]
;=> [true true true true false false]
---
[(string? "a") (string? :a) (map? {}) (map? []) (vector? []) (vector? {}) (boolean? false) (boolean? nil) (keyword? :a) (keyword? "a")]
;=> [true false true false true false true false true false]
---
;; keywords are the only identifiers (no symbol values)
[(ident? :a) (ident? :a/b) (ident? "a") (ident? nil) (simple-keyword? :a) (simple-keyword? :a/b) (simple-keyword? "a")]
;=> [true true false false true false false]
---
[(qualified-keyword? :a/b) (qualified-keyword? :a) (qualified-keyword? "a/b") (simple-ident? :a) (simple-ident? :a/b) (qualified-ident? :a/b) (qualified-ident? 1)]
;=> [true false false true false true false]
---
;; a char is a 1-char string
[(char? \a) (char? "a") (char? "é") (char? "ab") (char? "") (char? 97)]
;=> [true true true false false false]
---
[(coll? []) (coll? {}) (coll? #{}) (coll? "ab") (coll? nil) (coll? (range))]
;=> [true true true false false true]
---
[(sequential? [1]) (sequential? {}) (seq? [1]) (seq? "a") (list? '(1 2)) (sequential? (range))]
;=> [true false true false true true]
---
[(integer? 1) (integer? 1.0) (double? 1.0) (double? 1) (NaN? ##NaN) (NaN? 1) (infinite? ##-Inf) (infinite? 1.0)]
;=> [true false true false true false true false]
---
(NaN? nil)
;;; "type_error: 1:1: NaN\\?: expected number, got nil \\(arg 1\\)"
---
(regex? #"a")
;=> true
---
;; type names every kind; nil is :nil
[(type nil) (type true) (type 1) (type 1.5) (type "s") (type :k) (type [1]) (type {}) (type #{}) (type #"x") (type inc) (type (fn [x] x)) (type (range))]
;=> [:nil :boolean :number :number :string :keyword :vector :map :set :regex :function :function :vector]
---
;; zero? pos? neg? are false for non-numbers and NaN
[(zero? 0) (zero? 0.0) (zero? -0.0) (zero? 1) (zero? nil) (zero? "0") (zero? ##NaN)]
;=> [true true true false false false false]
---
[(pos? 1) (pos? 0) (pos? ##Inf) (pos? ##NaN) (pos? nil) (neg? -1) (neg? -0.5) (neg? 0) (neg? ##NaN) (neg? :a)]
;=> [true false true false false true true false false false]
---
[(even? 2) (even? 0) (even? -3) (odd? 3) (odd? -3) (odd? 0)]
;=> [true true false true true false]
---
;; even?/odd? need integers, as in Clojure
(even? 2.0)
;;; "type_error: 2:1: even\\?: expected integer, got 2.0 \\(arg 1\\)"
---
(odd? nil)
;;; "type_error: 1:1: odd\\?: expected integer, got nil \\(arg 1\\)"
---
(filter even? [1 2 3 4])
;=> [2 4]
---
;; compare: numbers -1/0/1; strings like Java's compareTo (char difference, else length difference)
[(compare 1 2) (compare 2 1) (compare 1 1.0) (compare 1.5 1) (compare ##-Inf 0)]
;=> [-1 1 0 1 -1]
---
[(compare "abc" "abd") (compare "b" "a") (compare "abc" "ab") (compare "" "a") (compare "a" "B") (compare "apple" "banana") (compare "a" "a")]
;=> [-1 1 1 -1 31 -1 0]
---
[(compare :a :b) (compare :b :a) (compare nil 1) (compare 1 nil) (compare nil nil) (compare false true) (compare true false)]
;=> [-1 1 -1 1 0 -1 1]
---
;; vectors: shorter first, then element-wise
[(compare [1 2] [1 3]) (compare [1 2 3] [1 3]) (compare [1] [1 2]) (compare [1 :a] [1 :b]) (compare [] [])]
;=> [-1 1 -1 -1 0]
---
(compare 1 "a")
;;; "type_error: 1:1: compare: cannot compare 1 with string \"a\""
---
(compare {:a 1} {:a 1})
;;; "type_error: 1:1: compare: cannot compare"
---
(reduce (fn [a b] (if (neg? (compare a b)) a b)) ["b" "a" "c"])
;=> "a"
---
(compare 1)
;;; "arity_error: 1:1: compare expects 2 args, got 1"
---
[(nat-int? 0) (nat-int? -1) (nat-int? 1.0) (pos-int? 1) (pos-int? 0) (neg-int? -2) (neg-int? -2.0) (any? nil) (any? false)]
;=> [true false false true false true false true true]
---
[(associative? {}) (associative? []) (associative? #{}) (associative? nil) (associative? "ab")]
;=> [true true false false false]
---
[(seqable? nil) (seqable? "") (seqable? []) (seqable? {}) (seqable? #{}) (seqable? (range 3)) (seqable? 1) (seqable? :a) (seqable? inc)]
;=> [true true true true true true false false false]
---
[(indexed? []) (indexed? {}) (indexed? "ab") (indexed? nil)]
;=> [true false false false]
---
[(counted? []) (counted? {}) (counted? #{}) (counted? "ab") (counted? nil)]
;=> [true true true false false]
---
[(reversible? []) (reversible? nil) (reversible? "ab")]
;=> [true false false]
---
;; every map and set is kept in key order, so all are sorted (Clojure: only sorted-map/sorted-set)
[(sorted? (sorted-map :b 1)) (sorted? (sorted-set 1)) (sorted? {:a 1}) (sorted? []) (sorted? nil)]
;=> [true true true false false]
---
[(rational? 1) (rational? 1.5) (rational? nil) (rational? "1")]
;=> [true false false false]
---
[(map-entry? (first {:a 1})) (map-entry? nil) (map-entry? [1 2 3]) (map-entry? {:a 1})]
;=> [true false false false]
---
;; Java's Double/isNaN and Double/isInfinite are NaN? and infinite?
[(Double/isNaN ##NaN) (Double/isNaN 1) (Double/isInfinite ##-Inf) (Double/isInfinite 1.5)]
;=> [true false true false]
---
(Double/isNaN "x")
;;; "type_error: .*expected number, got string \"x\" \\(arg 1\\)"
