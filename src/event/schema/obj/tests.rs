//! The exact-shape object reader's rules: kept members, made-anew objects and arrays, unknown
//! keys named by path.

use super::*;
use serde_json::json;

fn read(o: &mut Obj) -> Result<()> {
    o.string("a")?;
    o.opt_decoded("b", |v, p| {
        decode_array(v, p, |item, ip| {
            decode_object(item, ip, |i| i.number("n").map(drop))
        })
        .map(|items| array_of(v, items))
    })?;
    // `c` is checked and dropped, as `providerOptions` is.
    o.raw("c");
    Ok(())
}

#[test]
fn an_object_decoded_as_given_is_the_input_itself() {
    let value = json!({"a": "x", "b": [{"n": 1}, {"n": 2}]});
    let decoded = decode_object(&value, &Path::root(), read).unwrap();
    assert!(matches!(&decoded, Cow::Borrowed(v) if std::ptr::eq(*v, &value)));
}

#[test]
fn an_object_decoding_changed_is_made_anew_with_exactly_its_kept_members() {
    let value = json!({"a": "x", "b": [{"n": 1}], "c": {"dropped": true}});
    let decoded = decode_object(&value, &Path::root(), read).unwrap();
    assert!(matches!(decoded, Cow::Owned(_)));
    assert_eq!(*decoded, json!({"a": "x", "b": [{"n": 1}]}));
}

#[test]
fn an_element_made_anew_makes_its_array_anew() {
    let value = json!([{"n": 1}, {"n": 2}]);
    let items = vec![Cow::Borrowed(&value[0]), Cow::Owned(json!({"n": 5}))];
    let array = array_of(&value, items);
    assert!(matches!(array, Cow::Owned(_)));
    assert_eq!(*array, json!([{"n": 1}, {"n": 5}]));
}

#[test]
fn an_unknown_key_inside_an_element_is_named_by_its_path() {
    let value = json!({"a": "x", "b": [{"n": 1}, {"n": 2, "m": 3}]});
    let err = decode_object(&value, &Path::root(), read).unwrap_err();
    assert!(err.to_string().contains("b[1].m"), "{err}");
}

#[test]
fn objects_at_and_past_the_inline_bound_are_read_by_the_same_rules() {
    // Keys for objects up to past both inline bounds (the input's members and the output's).
    let all_keys: Vec<&'static str> = (0..MEMBERS_INLINE + 4)
        .map(|i| &*Box::leak(format!("k{i:02}").into_boxed_str()))
        .collect();
    // Just under, at and past the input's bound (at it plus an unknown key is past), and past
    // it by more; the output spills from its inline space on the way.
    let sizes = [
        MEMBERS_INLINE - 1,
        MEMBERS_INLINE,
        MEMBERS_INLINE + 1,
        MEMBERS_INLINE + 4,
    ];
    for n in sizes {
        let keys = &all_keys[..n];
        let value: Value = keys.iter().map(|k| (k.to_string(), json!(1))).collect();
        let all = |o: &mut Obj| keys.iter().try_for_each(|k| o.number(k).map(drop));
        let decoded = decode_object(&value, &Path::root(), all).unwrap();
        assert!(
            matches!(&decoded, Cow::Borrowed(v) if std::ptr::eq(*v, &value)),
            "{n}"
        );
        let mut more = value.clone();
        more["zz"] = json!(2);
        let err = decode_object(&more, &Path::root(), all).unwrap_err();
        assert!(err.to_string().contains("zz"), "{n}: {err}");
        let but_last = |o: &mut Obj| keys[..n - 1].iter().try_for_each(|k| o.number(k).map(drop));
        let err = decode_object(&value, &Path::root(), but_last).unwrap_err();
        assert!(err.to_string().contains(keys[n - 1]), "{n}: {err}");
        let dropped = |o: &mut Obj| {
            keys[1..].iter().try_for_each(|k| o.number(k).map(drop))?;
            o.raw(keys[0]);
            Ok(())
        };
        let kept = decode_object(&value, &Path::root(), dropped).unwrap();
        assert!(matches!(kept, Cow::Owned(_)), "{n}");
        assert_eq!(kept.as_object().map(|m| m.len()), Some(n - 1), "{n}");
    }
}

#[test]
fn a_key_asked_for_twice_hides_no_unknown_key() {
    let value = json!({"a": 1, "z": 2});
    let err = decode_object(&value, &Path::root(), |o| {
        o.raw("a");
        o.raw("a");
        Ok(())
    })
    .unwrap_err();
    assert!(err.to_string().contains('z'), "{err}");
}

#[test]
fn an_unknown_key_is_named_even_when_an_allowed_key_is_absent() {
    let value = json!({"a": "x", "z": 1});
    let err = decode_object(&value, &Path::root(), read).unwrap_err();
    assert!(err.to_string().contains('z'), "{err}");
}
