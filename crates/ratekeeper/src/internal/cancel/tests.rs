use super::{CancelWindow, Epoch};

#[test]
fn newest_first_chains_and_refuses_what_was_given_back() {
    // Grants A [0,10), B [10,20), C [20,30), all of epoch 0.
    let mut w = CancelWindow::new(0u64);
    assert!(w.allows(0, 30));
    w.record(20); // C given back: epoch 1
    assert!(w.allows(1, 20), "B is the latest now");
    assert!(!w.allows(1, 30), "C itself, again");
    w.record(10); // B: epoch 2
    assert!(w.allows(2, 10), "A");
    assert!(!w.allows(2, 20), "B again");
    w.record(0); // A: epoch 3
    assert!(!w.allows(3, 10));
    assert!(w.allows(0, 99), "a grant made after the cancels");
}

#[test]
fn epochs_wrap_and_tags_are_never_zero() {
    let last = Epoch(u32::MAX);
    assert_eq!(last.next(), Epoch::FIRST);
    assert_eq!(Epoch::FIRST.age(last.tag()), 1);
    assert_eq!(Epoch::FIRST.next().age(Epoch::FIRST.tag()), 1);
    assert_eq!(Epoch::FIRST.age(Epoch::FIRST.tag()), 0);
    assert_ne!(Epoch::FIRST.tag(), 0);
}

#[test]
fn a_higher_cut_shortens_the_window() {
    let mut w = CancelWindow::new(0u64);
    w.record(10); // epoch 1: back 1
    w.record(15); // epoch 2: the cut at 10 no longer bounds grants of epoch 0
    assert!(w.allows(1, 15));
    assert!(!w.allows(2, 15));
    w.reset();
    assert!(!w.allows(1, 15));
    assert!(w.allows(0, 15));
}
