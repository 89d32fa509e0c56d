//! Memory stays bounded: batch buffers are recycled, so a long run allocates
//! no more than the prefetch depth needs; the counters add up.

mod common;

use zrecord_loader::{Loader, Mode};

#[test]
fn a_long_run_recycles_its_buffers() {
    let dir = tempfile::tempdir().unwrap();
    let streams = common::streams(dir.path());
    let (workers, prefetch) = (3usize, 4usize);
    let mut loader = Loader::builder(20)
        .stream("label", streams.label.clone())
        .stream("image", streams.image.clone())
        .stream("tokens", streams.tokens.clone())
        .mode(Mode::Iid)
        .workers(workers)
        .prefetch(prefetch)
        .build()
        .unwrap();
    for _ in 0..50 {
        loader.next_batch().unwrap();
    }
    let warm = loader.counters().snapshot().buffers_allocated;
    for _ in 0..1000 {
        loader.next_batch().unwrap();
    }
    let c = loader.counters().snapshot();
    // Three streams per buffer set, and at most prefetch sets in flight plus
    // the one the consumer holds (it goes back to the pool when dropped): the
    // total is bounded whatever the run's length. (When the last sets get
    // allocated depends on thread timing, so the bound is all we assert.)
    let bound = 3 * (prefetch as u64 + 1);
    assert!(warm >= 3, "{warm} buffers allocated while warming up");
    assert!(
        c.buffers_allocated <= bound,
        "{} buffers allocated in 1,050 steps, more than {bound}",
        c.buffers_allocated
    );
    assert_eq!(c.steps_delivered, 1050);
    assert!(
        c.in_flight <= prefetch as u64 && c.ready <= c.in_flight,
        "{c:?}"
    );
    let per_batch = 20 * (8 + 12 * 4) as u64; // labels and images; tokens vary
    assert!(c.bytes_gathered >= 1050 * per_batch, "{c:?}");
    assert!(c.gather_time > std::time::Duration::ZERO);
}

#[test]
fn taking_buffers_out_costs_one_allocation_per_batch() {
    let dir = tempfile::tempdir().unwrap();
    let streams = common::streams(dir.path());
    let mut loader = Loader::builder(20)
        .stream("image", streams.image.clone())
        .transform(|mut b| b.take_dense("image").unwrap())
        .build()
        .unwrap();
    for _ in 0..100 {
        assert_eq!(loader.next_batch().unwrap().shape(), &[20, 3, 4]);
    }
    let allocated = loader.counters().snapshot().buffers_allocated;
    assert!((100..=110).contains(&allocated), "{allocated}");
}
