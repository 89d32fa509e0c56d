//! Encoded images into candle: a loader batch's images become the tensor the
//! transform writes, and the image predictor serves decoded, transformed
//! inputs, naming the record of an image that fails to decode.

use candle_core::{Device, Tensor};
use zrecord::{Codec, DenseStore, RaggedStore};
use zrecord_candle::vision::testing::png_rgb;
use zrecord_candle::vision::{BatchKey, Transform};
use zrecord_candle::{BatchConfig, Batcher, Error, ImagePredictor, image_tensor};
use zrecord_loader::Loader;

fn photos(dir: &std::path::Path, n: u8) -> (Vec<Vec<u8>>, RaggedStore<u8>) {
    let photos: Vec<Vec<u8>> = (0..n).map(|k| png_rgb(30 + u32::from(k), 20, k)).collect();
    let store = RaggedStore::<u8>::create(dir.join("images"), Codec::Raw).unwrap();
    store.append_slices(&photos).unwrap();
    (photos, store)
}

#[test]
fn a_loader_batch_becomes_the_tensor_the_transform_writes() {
    let dir = tempfile::tempdir().unwrap();
    let (photos, store) = photos(dir.path(), 8);
    let transform = Transform::random_resized_crop(12).flip(0.5);
    let mut loader = Loader::builder(4)
        .stream("image", store)
        .seed(3)
        .build()
        .unwrap();
    let _ = loader.next_batch().unwrap();
    let batch = loader.next_batch().unwrap();
    let tensor = image_tensor(&batch, "image", &transform, 9, &Device::Cpu).unwrap();
    assert_eq!(tensor.dims(), [4, 3, 12, 12]);

    let mut expected = vec![0f32; 4 * transform.image_len()];
    let images = batch
        .indices()
        .iter()
        .map(|&i| photos[i as usize].as_slice());
    let key = BatchKey {
        seed: 9,
        step: 1,
        first_position: 0,
        records: &[],
    };
    transform.batch_f32(images, key, &mut expected).unwrap();
    assert_eq!(
        tensor.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
        expected
    );
}

#[test]
fn the_predictor_decodes_per_request_and_names_a_corrupt_record() {
    let dir = tempfile::tempdir().unwrap();
    let (_, store) = photos(dir.path(), 3);
    store.append_slices(&[b"not an image".to_vec()]).unwrap();
    let transform = Transform::center_crop(20, 16);
    let predictor = ImagePredictor::new(store, transform, &Device::Cpu, |x: Tensor| {
        x.mean((1, 2, 3))
    })
    .unwrap();
    let input = predictor.input(&[2, 0]).unwrap();
    assert_eq!(input.dims(), [2, 3, 16, 16]);
    let batcher = Batcher::start(predictor, BatchConfig::default()).unwrap();
    assert_eq!(batcher.predict(vec![1, 2, 1]).unwrap().dims(), [3]);
    let error = batcher.predict(vec![0, 3]).unwrap_err();
    assert!(
        error.to_string().contains("record 3") || format!("{error:?}").contains("record: Some(3)"),
        "{error:?}"
    );
}

#[test]
fn only_ragged_u8_stores_serve_images() {
    let dir = tempfile::tempdir().unwrap();
    let dense = DenseStore::<u8>::create(dir.path().join("dense"), &[4], Codec::Raw).unwrap();
    let forward = |x: Tensor| Ok(x);
    assert!(matches!(
        ImagePredictor::new(dense, Transform::center_crop(8, 8), &Device::Cpu, forward),
        Err(Error::Loader(zrecord_loader::Error::WrongKind { .. }))
    ));
    let tokens = RaggedStore::<u32>::create(dir.path().join("tokens"), Codec::Raw).unwrap();
    assert!(matches!(
        ImagePredictor::new(tokens, Transform::center_crop(8, 8), &Device::Cpu, forward),
        Err(Error::Loader(zrecord_loader::Error::WrongDType { .. }))
    ));
    let empty = RaggedStore::<u8>::create(dir.path().join("empty"), Codec::Raw).unwrap();
    assert!(matches!(
        ImagePredictor::new(empty, Transform::center_crop(4, 8), &Device::Cpu, forward),
        Err(Error::Image(_))
    ));
}
