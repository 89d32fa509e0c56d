//! Training through a store that holds a corrupt image: by default the data
//! loader stops at it, naming the record; with `BadRecords::Skip` it
//! replaces the image by the same substitute in every run, after a resume
//! and on every rank, and counts each time it met it.

use burn::data::dataset::DatasetError;
use burn::nn::loss::CrossEntropyLossConfig;
use burn::nn::{Linear, LinearConfig};
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::{Device, Int, Tensor};
use zrecord::{Codec, DenseStore, RaggedStore};
use zrecord_burn::vision::Transform;
use zrecord_burn::vision::testing::png_rgb;
use zrecord_burn::{
    BadRecords, Batch, Error, StoreDataLoader, StoreDataLoaderBuilder, Stream, dense_tensor,
    image_tensor,
};
use zrecord_loader::Loader;

/// Images in the store; record `CORRUPT` is a PNG cut in half.
const LEN: u64 = 64;
const CORRUPT: u64 = 21;
const BATCH: u64 = 16;

/// A batch: images, labels and the records they came from.
#[derive(Clone, Debug)]
struct Photos {
    x: Tensor<4>,
    y: Tensor<1, Int>,
    records: Vec<u64>,
}

fn stores(dir: &std::path::Path) -> (Stream, Stream) {
    let images = RaggedStore::<u8>::create(dir.join("images"), Codec::Raw).unwrap();
    let files: Vec<Vec<u8>> = (0..LEN)
        .map(|k| {
            let png = png_rgb(16, 12, k as u8);
            if k == CORRUPT {
                png[..png.len() / 2].to_vec()
            } else {
                png
            }
        })
        .collect();
    images.append_slices(&files).unwrap();
    let labels = DenseStore::<i64>::create(dir.join("labels"), &[], Codec::Raw).unwrap();
    labels
        .append(&(0..LEN as i64).map(|k| k % 2).collect::<Vec<_>>())
        .unwrap();
    (images.into(), labels.into())
}

fn builder((images, labels): &(Stream, Stream)) -> StoreDataLoaderBuilder {
    StoreDataLoader::builder(BATCH)
        .stream("image", images.clone())
        .stream("label", labels.clone())
        .seed(3)
}

/// The centre of every image, no random choice: the ranks' tensors then
/// make up the whole batch's exactly.
fn convert(mut batch: Batch, device: &Device) -> zrecord_burn::Result<Photos> {
    let transform = Transform::center_crop(12, 8);
    Ok(Photos {
        x: image_tensor(&batch, "image", &transform, 3, device)?,
        y: dense_tensor(&mut batch, "label", device)?,
        records: batch.indices().to_vec(),
    })
}

/// Records and pixels of each batch served.
type Served = Vec<(Vec<u64>, Vec<f32>)>;

/// A linear classifier trained `epochs` epochs; returns what was served and
/// the last loss.
fn train(loader: &StoreDataLoader<Photos>, epochs: usize) -> Result<(Served, f32), DatasetError> {
    let device = loader.device().clone();
    let mut model: Linear = LinearConfig::new(3 * 8 * 8, 2).init(&device);
    let mut optim = AdamConfig::new().init();
    let (mut served, mut loss) = (Vec::new(), f32::NAN);
    for _ in 0..epochs {
        for batch in loader.iter() {
            let batch = batch?;
            served.push((
                batch.records.clone(),
                batch.x.clone().into_data().try_to_vec::<f32>().unwrap(),
            ));
            let n = batch.records.len();
            let x: Tensor<2> = batch.x.reshape([n, 3 * 8 * 8]);
            let output = CrossEntropyLossConfig::new()
                .init(&device)
                .forward(model.forward(x), batch.y);
            loss = output.clone().into_scalar::<f32>();
            let grads = GradientsParams::from_grads(output.backward(), &model);
            model = optim.step(0.01, model, grads);
        }
    }
    Ok((served, loss))
}

#[test]
fn by_default_training_stops_at_the_corrupt_image_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let device = Device::flex().autodiff();
    let stores = stores(dir.path());
    let loader = builder(&stores).build(&device, convert).unwrap();
    let mut error = None;
    for batch in loader.iter() {
        if let Err(e) = batch {
            error = Some(e);
            break;
        }
    }
    let error = error.expect("the epoch meets the corrupt image");
    let message = error.to_string();
    assert!(
        message.contains(&format!("(record {CORRUPT})")),
        "{message}"
    );
    assert!(matches!(
        Error::from_dataset_error(&error),
        Some(Error::Image(zrecord_burn::vision::Error::Batch {
            record: Some(CORRUPT),
            ..
        }))
    ));
    assert_eq!(loader.counters().bad_records_skipped, 0);
    // The training stops as it did: `train` returns the error.
    let again = builder(&stores).build(&device, convert).unwrap();
    assert!(train(&again, 1).is_err());
}

#[test]
fn skipping_serves_the_same_substitutes_in_every_run_resume_and_rank() {
    let dir = tempfile::tempdir().unwrap();
    let device = Device::flex().autodiff();
    let stores = stores(dir.path());
    let base = builder(&stores).bad_records(BadRecords::Skip);
    let epochs = 3;
    let loader = base.clone().build(&device, convert).unwrap();
    let (served, loss) = train(&loader, epochs).unwrap();
    assert!(loss.is_finite());
    let steps = served.len() as u64;
    assert_eq!(steps, 3 * LEN / BATCH);

    // Every batch the sampler chose, with the corrupt image replaced.
    let plan = Loader::builder(BATCH)
        .stream("image", stores.0.clone())
        .stream("label", stores.1.clone())
        .seed(3)
        .plan()
        .unwrap();
    let mut met = 0;
    for (step, (records, _)) in served.iter().enumerate() {
        for (&sampled, &record) in plan.sampler().batch_at(step as u64).iter().zip(records) {
            if sampled == CORRUPT {
                met += 1;
                assert_ne!(record, CORRUPT);
            } else {
                assert_eq!(record, sampled);
            }
        }
    }
    assert_eq!(
        met, epochs as u64,
        "a cyclic pass of 64 in batches of 16 meets it once"
    );
    assert_eq!(loader.counters().bad_records_skipped, met);

    // A second run serves the same batches.
    let again = base.clone().build(&device, convert).unwrap();
    assert_eq!(train(&again, epochs).unwrap().0, served);

    // Resumed at step 5: the steps from there.
    let resumed = base.clone().start_step(5).build(&device, convert).unwrap();
    let tail = train(&resumed, 1).unwrap().0;
    assert_eq!(tail[..], served[5..5 + tail.len()]);

    // Two ranks: their halves make up the whole batches, substitutes included.
    let halves: Vec<Served> = (0..2)
        .map(|rank| {
            let loader = base.clone().shard(rank, 2).build(&device, convert).unwrap();
            train(&loader, epochs).unwrap().0
        })
        .collect();
    for (step, (records, pixels)) in served.iter().enumerate() {
        let (a, b) = (&halves[0][step], &halves[1][step]);
        assert_eq!([a.0.clone(), b.0.clone()].concat(), *records, "step {step}");
        assert_eq!([a.1.clone(), b.1.clone()].concat(), *pixels, "step {step}");
    }
}
