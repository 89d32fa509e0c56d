//! `StoreDataset`: Burn's `Dataset` over stores — `get` and `get_many` agree
//! with the stores, errors are `Err`s, and Burn's own `DataLoaderBuilder`
//! works on top.

use burn::data::dataloader::DataLoaderBuilder;
use burn::data::dataloader::batcher::Batcher;
use burn::data::dataset::Dataset;
use burn::tensor::{Device, Int, Tensor, TensorData};
use zrecord::{Codec, DenseStore, RaggedStore};
use zrecord_burn::{Error, StoreDataset};

#[derive(Clone, Debug, PartialEq)]
struct Item {
    index: u64,
    pixels: Vec<u8>,
    tokens: Vec<u32>,
    label: i64,
}

fn dataset(dir: &std::path::Path, n: usize) -> StoreDataset<Item> {
    let images = DenseStore::<u8>::create(dir.join("images"), &[2, 3], Codec::Zstd).unwrap();
    images
        .append(&(0..n * 6).map(|v| v as u8).collect::<Vec<_>>())
        .unwrap();
    let tokens = RaggedStore::<u32>::create(dir.join("tokens"), Codec::Zstd).unwrap();
    tokens
        .append_slices(
            &(0..n as u32)
                .map(|i| vec![i; 1 + i as usize % 3])
                .collect::<Vec<_>>(),
        )
        .unwrap();
    let labels = DenseStore::<i64>::create(dir.join("labels"), &[], Codec::Raw).unwrap();
    labels
        .append(&(0..n as i64).map(|i| 100 + i).collect::<Vec<_>>())
        .unwrap();
    StoreDataset::builder()
        .stream("image", images)
        .stream("tokens", tokens)
        .stream("label", labels)
        .build(|record| {
            assert_eq!(record.dense::<u8>("image")?.shape(), &[2, 3]);
            Ok(Item {
                index: record.index(),
                pixels: record.dense_slice::<u8>("image")?.to_vec(),
                tokens: record.ragged::<u32>("tokens")?.iter().copied().collect(),
                label: record.dense_slice::<i64>("label")?[0],
            })
        })
        .unwrap()
}

fn expected(i: usize) -> Item {
    Item {
        index: i as u64,
        pixels: (i * 6..i * 6 + 6).map(|v| v as u8).collect(),
        tokens: vec![i as u32; 1 + i % 3],
        label: 100 + i as i64,
    }
}

#[test]
fn get_and_get_many_match_the_stores() {
    let dir = tempfile::tempdir().unwrap();
    let data = dataset(dir.path(), 20);
    assert_eq!(data.len(), 20);
    assert_eq!(data.get(7).unwrap(), expected(7));
    let many = data.get_many(vec![19, 0, 7, 7]).unwrap();
    assert_eq!(
        many,
        vec![expected(19), expected(0), expected(7), expected(7)]
    );
    assert!(data.get_many(vec![]).unwrap().is_empty());
    let all: Vec<Item> = data.iter().map(Result::unwrap).collect();
    assert_eq!(all, (0..20).map(expected).collect::<Vec<_>>());
}

#[test]
fn errors_are_errs_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let data = dataset(dir.path(), 5);
    let err = data.get(5).unwrap_err();
    assert!(matches!(
        Error::from_dataset_error(&err),
        Some(Error::Store(zrecord::Error::IndexOutOfRange {
            index: 5,
            len: 5
        }))
    ));
    assert!(data.get_many(vec![0, 9]).is_err());

    // An item function asking for a stream that is not there.
    let x = DenseStore::<u8>::create(dir.path().join("x"), &[], Codec::Raw).unwrap();
    x.append(&[1, 2]).unwrap();
    let bad = StoreDataset::builder()
        .stream("x", x)
        .build(|record| record.dense_slice::<u8>("y").map(|v| v[0]))
        .unwrap();
    assert!(matches!(
        Error::from_dataset_error(&bad.get(0).unwrap_err()),
        Some(Error::Loader(zrecord_loader::Error::UnknownStream { .. }))
    ));
}

#[test]
fn builder_checks_the_streams() {
    let dir = tempfile::tempdir().unwrap();
    let a = DenseStore::<u8>::create(dir.path().join("a"), &[], Codec::Raw).unwrap();
    a.append(&[1, 2, 3]).unwrap();
    let b = DenseStore::<u8>::create(dir.path().join("b"), &[], Codec::Raw).unwrap();
    b.append(&[1, 2]).unwrap();
    let r = StoreDataset::builder()
        .stream("a", a)
        .stream("b", b)
        .build(|_| Ok(()));
    assert!(matches!(
        r,
        Err(Error::Loader(zrecord_loader::Error::LengthMismatch { .. }))
    ));
    assert!(matches!(
        StoreDataset::builder().build(|_| Ok(())),
        Err(Error::Loader(zrecord_loader::Error::NoStreams))
    ));
}

#[test]
fn single_store_datasets_yield_arrays() {
    let dir = tempfile::tempdir().unwrap();
    let store = DenseStore::<f32>::create(dir.path().join("d"), &[2], Codec::Zstd).unwrap();
    store.append(&[1.0, 2.0, 3.0, 4.0]).unwrap();
    let data = StoreDataset::<ndarray::ArrayD<f32>>::dense(store).unwrap();
    assert_eq!(
        data.get(1).unwrap(),
        ndarray::arr1(&[3.0f32, 4.0]).into_dyn()
    );

    let tokens = RaggedStore::<i32>::create(dir.path().join("t"), Codec::Zstd).unwrap();
    tokens.append_slices(&[vec![1], vec![2, 3]]).unwrap();
    let data = StoreDataset::<ndarray::ArrayD<i32>>::ragged(tokens).unwrap();
    assert_eq!(data.get(1).unwrap().shape(), &[2]);

    let wrong = DenseStore::<u8>::create(dir.path().join("w"), &[], Codec::Raw).unwrap();
    assert!(StoreDataset::<ndarray::ArrayD<f32>>::dense(wrong).is_err());
}

#[derive(Clone)]
struct LabelBatcher;

impl Batcher<Item, Tensor<1, Int>> for LabelBatcher {
    fn batch(&self, items: Vec<Item>, device: &Device) -> Tensor<1, Int> {
        let labels: Vec<i64> = items.iter().map(|i| i.label).collect();
        let n = labels.len();
        Tensor::from_data(TensorData::new(labels, [n]), device)
    }
}

#[test]
fn burns_own_data_loader_builder_works_on_it() {
    let dir = tempfile::tempdir().unwrap();
    let data = dataset(dir.path(), 10);
    let loader = DataLoaderBuilder::new(LabelBatcher)
        .batch_size(4)
        .set_device(Device::flex())
        .build(data);
    let labels: Vec<i64> = loader
        .iter()
        .flat_map(|b| b.unwrap().into_data().try_to_vec_as::<i64>().unwrap())
        .collect();
    assert_eq!(labels, (100..110).collect::<Vec<i64>>());
}
