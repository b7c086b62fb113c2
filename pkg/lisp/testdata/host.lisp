;; ctx/
;; @ctx {"user": {"id": 7, "name": "ann"}, "n": 3}
ctx/n
;=> 3
---
;; @ctx {"user": {"id": 7, "name": "ann"}}
(:id ctx/user)
;=> 7
---
;; @ctx {"user": {"id": 7}}
(get-in-missing ctx/user)
;;; "undefined symbol: get-in-missing"
---
;; @ctx {"x": 1}
ctx/missing
;=> nil
---
;; @ctx {"x": 1}
data/x
;=> 1
---
;; @ctx {"user-id": 1, "user_id": 2}
ctx/user-id
;=> 1
---
;; @ctx {"price": 1.5, "big": 12345678901234, "f": 2.0}
[ctx/price ctx/big ctx/f]
;=> [1.5 12345678901234 2.0]
---
;; ctx falls back to memory
;; @mem {"prev": 9}
ctx/prev
;=> 9
---
ctx
;;; "undefined symbol: ctx.*\n(.|\n)*hint: read inputs as ctx/name"
---
;; @ctx {"_secret": "s", "ok": 1}
ctx/_secret
;=> "s"
---
;; @ctx {"m": {"_secret": "s", "ok": 1}}
(pr-str ctx/m)
;=> "{\"_secret\" <Firewalled> \"ok\" 1}"
---
;; @ctx {"m": {"_secret": "s", "ok": 1}}
(str {:_k 1 :a 2})
;=> "{:_k <Firewalled> :a 2}"
---
;; @ctx {"m": {"_secret": "s"}}
(println ctx/m)
;; @prints "{\"_secret\" <Firewalled>}"
---
;; memory
(memory/put :x 5)
;=> 5
---
(memory/put :x 5)
[memory/x mem/x x-missing-is-fine-in-or]
;;; "undefined symbol: x-missing-is-fine-in-or"
---
(memory/put :x 5)
[memory/x mem/x (memory/get :x) (mem/get "x") memory/nothing]
;=> [5 5 5 5 nil]
---
;; @mem {"total": 10}
(+ total 1)
;=> 11
---
;; @mem {"total": 10}
(def total (+ total 5))
total
;=> 15
---
;; @mem {"count": 10}
(count [1 2])
;=> 2
---
(memory/get 42)
;;; "type_error: .*memory/get: expected a keyword or string name, got 42"
---
;; Memory Result Contract
;; @contract
{:a 1 :return 5}
;=> 5
---
;; @contract
{:a 1 :b 2}
;=> {:a 1 :b 2}
---
;; tools
(tool/echo {:user-id 1 :tags [:a "b"] :nested {:k-k :v}})
;=> {"nested" {"k_k" "v"} "tags" ["a" "b"] "user_id" 1}
---
(tool/echo :a 1 :b-c 2)
;=> {"a" 1 "b_c" 2}
---
(tool/echo)
;=> {}
---
(tool/echo nil)
;=> {}
---
(tool/add {:a 2 :b 3})
;=> 5
---
(call "add" {:a 2 :b 3})
;=> 5
---
(call (str "ad" "d") {:a 2 :b 3})
;=> 5
---
(call "echo")
;=> {}
---
(tool/get-users)
;=> [{"age" 31 "id" 1 "name" "ann" "role" "admin"} {"age" 25 "id" 2 "name" "bob" "role" "user"} {"age" 40 "id" 3 "name" "cy" "role" "user"}]
---
(->> (tool/get_users) (filter (where :role = :user)) (map :name))
;=> ["bob" "cy"]
---
(map :id (tool/get_users))
;=> [1 2 3]
---
(tool/serch {})
;;; "unknown_tool: 1:2: unknown tool: serch; the tools this program may call: add, boom, echo, get_users, hang, panic, slow"
---
(tool/get_user {})
;;; "unknown_tool: 1:2: unknown tool: get_user \\(did you mean get_users\\?\\); the tools this program may call: "
---
(call "serch" {})
;;; "unknown_tool: .*unknown tool: serch"
---
(call (str "ser" "ch") {})
;;; "unknown_tool: .*unknown tool: serch; the tools this program may call: add"
---
(do (memory/put :ran true) (tool/nope))
;;; "unknown_tool"
---
(tool/echo 1 2)
;;; "tool_args_error: .*tool calls take named arguments"
---
(tool/echo "x")
;;; "tool_args_error"
---
(let [x 1] (tool/echo x))
;;; "tool_args_error: .*tool calls take named arguments: \\(tool/echo \\{:key value\\}\\), got 1"
---
(tool/boom {})
;;; "tool_error: 1:1: tool 'boom' failed: rate limited"
---
(tool/panic)
;;; "tool_error: .*tool 'panic' failed: panic: kaboom"
---
(map tool/add [{:a 1 :b 1} {:a 2 :b 2}])
;=> [2 4]
---
;; return / fail
(return 42)
(fail "not reached")
;=> 42
---
(call "return" {:a 1})
;=> {:a 1}
---
(-> 5 inc return)
;=> 6
---
(reduce (fn [a x] (if (= x 3) (return {:found x}) a)) 0 [1 2 3 4])
;=> {:found 3}
---
(loop [i 0] (if (= i 5) (return i) (recur (inc i))))
;=> 5
---
(for [x [1 2 3]] (if (= x 2) (return :two) x))
;=> :two
---
(fail "plain message")
;;; "^failed: 1:1: plain message"
---
(fail {:reason :not_found :message "no such user"})
;;; "^not_found: 1:1: no such user"
---
(call "fail" {:reason :bad_input :message "x"})
;;; "^bad_input: "
---
(fail 42)
;;; "^failed: 1:1: 42"
---
(pmap (fn [x] (return x)) [1 2])
;;; "return is not allowed inside pmap or pcalls"
---
;; pmap / pcalls
[(pmap + [1 2] [3 4]) (pmap vector [1 2 3] [4 5] [6 7 8]) (pmap + (range) [10 20]) (pmap + [1] [])]
;=> [[4 6] [[1 4 6] [2 5 7]] [10 21] []]
---
(pmap + [1] 5)
;;; "pmap: expected a collection, got 5 \\(arg 3\\)"
---
(pmap (fn [x] (* x x)) [1 2 3 4 5 6 7 8 9 10])
;=> [1 4 9 16 25 36 49 64 81 100]
---
(pmap (fn [x] (tool/add {:a x :b 1})) [1 2 3])
;=> [2 3 4]
---
(pcalls (fn [] 1) (fn [] (tool/add {:a 1 :b 1})))
;=> [1 2]
---
(pcalls (fn [] 1) (fn [] (tool/boom)))
;;; "tool_error: .*pcalls: thunk 1 failed: tool 'boom' failed"
---
(pmap (fn [x] (def y x)) [1 2])
y
;;; "undefined symbol: y"
---
(pmap (fn [x] (tool/slow)) [1 2 3 4 5 6])
;=> ["done" "done" "done" "done" "done" "done"]
---
;; println
(println "a" 1 nil :k "b" [1 "x"])
;; @prints "a 1 nil :k b [1 \"x\"]"
---
(prn "a" 1)
;; @prints "\"a\" 1"
---
(println ["a" "b"])
;; @prints "ab"
---
(println)
;; @prints ""
---
;; the line println or prn would print, as a value
[(print-str "a" 1 nil :k "b" [1 "x"]) (print-str ["a" "b"]) (print-str) (println-str "a" nil) (println-str) (prn-str "a" 1) (prn-str)]
;=> ["a 1 nil :k b [1 \"x\"]" "ab" "" "a nil\n" "\n" "\"a\" 1\n" "\n"]
---
;; @ctx {"m": {"_secret": "s"}}
(print-str ctx/m "s")
;=> "{\"_secret\" <Firewalled>} s"
---
;; printing
(pr-str 1.0 100.0 1e7 1.5e-4 0.001 -0.0 ##-Inf ##NaN)
;=> "1.0 100.0 1.0E7 1.5E-4 0.001 -0.0 ##-Inf ##NaN"
---
(str 1.0 ##Inf ##-Inf ##NaN nil "x" :k)
;=> "1.0Infinity-InfinityNaNx:k"
---
(pr-str "a\"b\\c\nd\te")
;=> "\"a\\\"b\\\\c\\nd\\te\""
---
(pr-str {3 :n :k 1 "s" 2 [1] 4 2.5 :f})
;=> "{2.5 :f 3 :n :k 1 \"s\" 2 [1] 4}"
---
(pr-str #{"b" :a 1})
;=> "#{1 :a \"b\"}"
---
(def v 1)
(pr-str v)
;=> "1"
---
(pr-str (def v 1))
;=> "#'v"
---
(pr-str #"\d+")
;=> "#\"\\d+\""
---
(pr-str +)
;=> "#<builtin>"
---
(= 1 1.0)
;=> true
---
(count #{1 1.0 2})
;=> 2
---
(= {:a 1} {:a 1.0})
;=> true
---
(= :a "a")
;=> false
---
(= [1 2] [1 2])
;=> true
---
(= ##NaN ##NaN)
;=> false
---
(= "a" \a)
;=> true
---
(get {:a 1} :b :d)
;=> :d
---
(get {:a nil} :a :d)
;=> nil
---
(get [1 2 3] 1)
;=> 2
---
(get "abc" 1)
;=> "b"
---
(get nil :a)
;=> nil
---
(count "héllo")
;=> 5
---
(count {:a 1 :b 2})
;=> 2
---
(count nil)
;=> 0
---
(count 42)
;;; "type_error: 1:1: count: expected a collection, got 42 \\(arg 1\\)"
