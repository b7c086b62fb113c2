;; reader
42
;=> 42
---
-17
;=> -17
---
3.14
;=> 3.14
---
1e5
;=> 100000.0
---
2.5E-3
;=> 0.0025
---
[##Inf ##-Inf]
;=> [##Inf ##-Inf]
---
Double/POSITIVE_INFINITY
;=> ##Inf
---
"a\nb\t\"q\"\\"
;=> "a\nb\t\"q\"\\"
---
"\d+"
;=> "\\d+"
---
"\u0041"
;=> "A"
---
[\a \newline \space \tab \r]
;=> ["a" "\n" " " "\t" "r"]
---
[:id :user-id :ok? :a/b]
;=> [:id :user-id :ok? :a/b]
---
[1, 2,, 3]
;=> [1 2 3]
---
(+ 1 2))
;;; "parse_error: 1:8: unbalanced parentheses: unexpected '\\)'(.|\n)*hint: remove the extra closing bracket"
---
(+ 1 2) ]
(+ 3 4)
;;; "parse_error: 1:9: unbalanced parentheses: unexpected '\\]'"
---
}
;;; "parse_error: 1:1: unbalanced parentheses: unexpected '}'"
---
#_(fail "x") 5
;=> 5
---
[1 #_2 3]
;=> [1 3]
---
(def x 1)
#'x
;=> 1
---

;=> nil
---
; only a comment
;=> nil
---
{:a 1 :a 2}
;=> {:a 2}
---
#{1 1 2}
;=> #{1 2}
---
()
;=> []
---
(+ 1
;;; "parse_error: 1:1: unbalanced parentheses: 1 unclosed '\\('"
---
(let [x (+ 1 2)
;;; "parse_error: .*unbalanced parentheses: 2 unclosed '\\('"
---
[1 2
;;; "1:1: unbalanced parentheses: 1 unclosed '\\['"
---
(+ 1 2]
;;; "parse_error: 1:7: mismatched '\\]': expected '\\)' to close '\\(' at 1:1"
---
{:a}
;;; "parse_error: 1:1: map literal must contain an even number of forms, got 1"
---
"abc
;;; "parse_error: 1:1: unterminated string"
---
1/3
;;; "parse_error: 1:1: invalid number: 1/3(.|\n)*hint: ratios are not supported"
---
0x1F
;;; "invalid number: 0x1F"
---
+5
;;; "invalid number: \\+5"
---
99999999999999999999
;;; "integer out of range"
---
1.
;;; "invalid number: 1."
---
@x
;;; "parse_error: .*@ \\(deref\\) is not supported"
---
^:meta x
;;; "metadata is not supported"
---
`(a)
;;; "syntax quote is not supported"
---
#inst "2020"
;;; "unsupported reader form: #inst"
---
##Foo
;;; "invalid symbolic value: ##Foo"
---
::x
;;; "invalid keyword: ::x"
---
(do
  (+ 1 2)
  (undefined-fn 3))
;;; "unbound_symbol: 3:4: undefined symbol: undefined-fn\n    \\(undefined-fn 3\\)\\)\n     \\^"
---
(fitler odd? [1])
;;; "undefined symbol: fitler(.|\n)*hint: did you mean filter"
---
(map inc my_list)
;;; "undefined symbol: my_list"
---
(let [user-id 1] user_id)
;;; "undefined symbol: user_id(.|\n)*hint: did you mean user-id"
---
(try (+ 1 2))
;;; "undefined symbol: try(.|\n)*hint: try/catch is not supported"
---
(atom 1)
;;; "hint: atoms are not supported"
---
(transduce (map inc) + [1 2])
;;; "hint: transducers are not supported; thread the collection through map, filter and reduce with ->>"
---
(foo/bar 1)
;;; "unknown namespace foo/; use tool/ for tools, ctx/ for inputs"
---
(clojure.string/frobnicate "x")
;;; "clojure.string/frobnicate is not available\n(.|\n)*hint: string functions: .*subs, str/join, str/split, "
---
;; a close name wins over the category list
(str/uper-case "x")
;;; "str/uper-case is not available(.|\n)*hint: did you mean upper-case"
---
(Math/cube-root 2)
;;; "Math/cube-root is not available(.|\n)*hint: math functions: \\+, -, \\*, /, inc, dec"
---
(clojure.set/frobnicate #{1})
;;; "hint: set functions: set, union, intersection, difference"
---
;; Clojure functions the language leaves out name their category
(bigint 6)
;;; "unbound_symbol: 2:2: bigint is not available(.|\n)*hint: math functions: "
---
(vector-of :int 1 2)
;;; "vector-of is not available(.|\n)*hint: collection functions: .*first, second, last, nth"
---
if
;;; "if is a special form and cannot be used as a value(.|\n)*hint: write \\(if ...\\)"
---
(.foo "x")
;;; "unknown method: .foo"
---
(#"(?=a)" "a")
;;; "regex_error: .*lookaround is not supported"
---
#"(a"
;;; "regex_error: .*invalid regex"
---
(require 'clojure.walk)
;;; "hint: require is not needed: clojure.string/, clojure.set/ and clojure.walk/ functions are built in"
